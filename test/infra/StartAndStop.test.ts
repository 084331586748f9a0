import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type RunningProcess, spawnProcess } from "../support/ChildProcess.ts"
import { answers } from "../support/Net.ts"
import { eventually } from "../support/Streams.ts"
import { dropIsolated, isolatedEnv } from "../support/TestPlatform.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** The Node version package-lock.json pins (the `node` package every npm script runs on). */
const pinnedNode = (
  JSON.parse(readFileSync(`${root}package-lock.json`, "utf8")) as {
    packages: Record<string, { version?: string }>
  }
).packages["node_modules/node"]!.version!

interface Started {
  readonly annotations: { readonly ports: Record<string, number>; readonly node: string }
}

/** `npm start` as a developer runs it, on this file's own database and subject prefix, every port picked free. */
const npmStart = Effect.gen(function* () {
  const env = isolatedEnv({
    PARTNER_API_PORT: "0",
    INGEST_API_PORT: "0",
    ENROLLMENT_PORT: "0",
    CONSOLE_PORT: "0",
    PORTAL_PORT: "0",
    LOG_LEVEL: "info",
  })
  yield* Effect.addFinalizer(() => Effect.promise(() => dropIsolated(env)))
  const npm = yield* spawnProcess("npm", ["start"], { cwd: root, env })
  yield* npm.waitFor("stdout", /"message":"started"/)
  const line = npm
    .stdout()
    .split("\n")
    .find((l) => l.includes('"message":"started"'))!
  return { npm, started: JSON.parse(line) as Started }
})

/** The processes of the group `npm` leads whose command line runs `script`. */
const groupMembers = (npm: RunningProcess, script: string) =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
        const group = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2])
        const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ")
        return group === npm.pid && command.includes(script) ? [Number(pid)] : []
      } catch {
        return []
      }
    })

/** Every process of the tree gone and none of the five ports answering. */
const assertStopped = (npm: RunningProcess, ports: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    yield* eventually(npm.groupRunning, (running) => !running)
    for (const port of ports) assert.isFalse(yield* Effect.promise(() => answers(port)), `port ${port}`)
  })

describe("npm start", () => {
  it.live(
    "runs on the pinned Node, and SIGTERM to the npm process stops the whole tree and frees the five ports",
    () =>
      Effect.gen(function* () {
        const { npm, started } = yield* npmStart
        const ports = started.annotations.ports
        assert.sameMembers(Object.keys(ports), [
          "partner-api",
          "ingest-api",
          "enrollment",
          "console",
          "portal",
        ])
        assert.strictEqual(started.annotations.node, pinnedNode)
        const metrics = yield* Effect.promise(() =>
          fetch(`http://127.0.0.1:${ports.console}/metrics`).then((response) => response.text()),
        )
        assert.include(metrics, `nodejs_version_info{version="v${pinnedNode}"`)

        process.kill(npm.pid, "SIGTERM")
        assert.deepStrictEqual(yield* npm.exited, { code: 0, signal: null }, npm.stderr())
        yield* assertStopped(npm, Object.values(ports))
      }).pipe(Effect.scoped),
  )

  it.live("SIGINT to the service process alone stops npm and the bootstrap too", () =>
    Effect.gen(function* () {
      const { npm, started } = yield* npmStart
      const [service] = groupMembers(npm, "backend/main.ts")
      assert.isDefined(service, "the service process")
      process.kill(service!, "SIGINT")
      assert.deepStrictEqual(yield* npm.exited, { code: 0, signal: null }, npm.stderr())
      yield* assertStopped(npm, Object.values(started.annotations.ports))
    }).pipe(Effect.scoped),
  )
})

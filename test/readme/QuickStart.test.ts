import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnProcess } from "../support/ChildProcess.ts"
import { freePort } from "../support/Net.ts"
import { dropIsolated, isolatedEnv } from "../support/TestPlatform.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** The `sh` blocks of the README's quick start, in order: the service, the receiver, the partner's calls. */
const quickStartBlocks = () => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const section = readme.slice(
    readme.indexOf("\n## Quick start"),
    readme.indexOf("\n## ", readme.indexOf("\n## Quick start") + 1),
  )
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!)
}

describe("the README's quick start", () => {
  it.live(
    "takes a fresh data folder to a prospect.ready delivery whose signature the test receiver verifies",
    () =>
      Effect.gen(function* () {
        const blocks = quickStartBlocks()
        assert.strictEqual(blocks.length, 3, "the service, the receiver, the partner's calls")
        const [apiPort, receiverPort] = [yield* Effect.promise(freePort), yield* Effect.promise(freePort)]
        // The commands as written, but for the two ports, which other processes on this machine may hold.
        const asRun = (block: string) =>
          block.replaceAll("127.0.0.1:8080", `127.0.0.1:${apiPort}`).replaceAll("8443", String(receiverPort))
        const [service, receiver, partner] = blocks.map(asRun) as [string, string, string]
        assert.include(service, "npm start")
        assert.include(receiver, "webhooks test-receiver")

        // A data folder of its own, so the receiver's CA is made only after the service started.
        mkdirSync(join(root, ".data"), { recursive: true })
        const workDir = mkdtempSync(join(root, ".data", "quickstart-"))
        const env = isolatedEnv({
          PARTNER_DATA_DIR: join(workDir, "data"),
          PARTNER_API_PORT: String(apiPort),
          INGEST_API_PORT: "0",
          ENROLLMENT_PORT: "0",
          CONSOLE_PORT: "0",
          PORTAL_PORT: "0",
          LOG_LEVEL: "info",
        })
        yield* Effect.addFinalizer(() =>
          Effect.promise(() => dropIsolated(env)).pipe(
            Effect.andThen(Effect.sync(() => rmSync(workDir, { recursive: true, force: true }))),
          ),
        )
        const shell = (script: string) =>
          spawnProcess("bash", ["-euo", "pipefail", "-c", script], { cwd: workDir, env })

        const started = yield* shell(service)
        yield* started.waitFor("stdout", /"message":"started"/)
        const listening = yield* shell(receiver)
        yield* listening.waitFor("stdout", new RegExp(`^https://127\\.0\\.0\\.1:${receiverPort}/$`, "m"))

        const calls = yield* shell(partner)
        const exit = yield* calls.exited
        assert.deepStrictEqual(exit, { code: 0, signal: null }, `${calls.stdout()}\n${calls.stderr()}`)
        yield* listening.waitFor("stdout", /^prospect\.ready \d+ signature (in)?valid$/m)
        assert.match(listening.stdout(), /^prospect\.ready 1 signature valid$/m, listening.stderr())
      }).pipe(Effect.scoped),
  )
})

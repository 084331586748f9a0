import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { spawnProcess } from "../support/ChildProcess.ts"
import { dropIsolated, isolatedEnv } from "../support/TestPlatform.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

describe("service shutdown", () => {
  it.live(
    "drains and exits 0 however many times its process group is told to stop while it does",
    () =>
      Effect.gen(function* () {
        const env = isolatedEnv({ ROLES: "partner-api,workers", PARTNER_API_PORT: "0", LOG_LEVEL: "info" })
        yield* Effect.addFinalizer(() => Effect.promise(() => dropIsolated(env)))
        // One node process, so every signal is its own.
        const service = yield* spawnProcess(process.execPath, ["backend/main.ts"], {
          cwd: root,
          env,
        })
        yield* service.waitFor("stdout", /"started"/)
        // Signals keep coming until it has exited, so some land after the runtime let go of its own listeners.
        const repeating = yield* Effect.forkChild(
          Effect.forever(service.signal("SIGTERM").pipe(Effect.andThen(Effect.sleep("5 millis")))),
        )
        const exit = yield* service.exited
        yield* Fiber.interrupt(repeating)
        assert.deepStrictEqual(exit, { code: 0, signal: null }, service.stderr())
        assert.include(service.stdout(), `"actor drained"`)
      }).pipe(Effect.scoped),
    60_000,
  )
})

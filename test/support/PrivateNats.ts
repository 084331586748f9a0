import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { spawnProcess } from "./ChildProcess.ts"

/**
 * A nats-server with JetStream of the test's own on `port`, storing in `dir`, once it says it is ready; killed
 * with the scope. Fault tests stop, freeze or kill it, never the machine's shared server.
 */
export const privateNats = (port: number, dir: string) =>
  Effect.gen(function* () {
    const server = yield* spawnProcess(
      "nats-server",
      ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir],
      { cwd: dir, env: process.env },
    )
    yield* server.waitFor("stderr", /Server is ready/)
    return server
  })

/** A temporary folder for a private server's store, removed with the scope. */
export const storeDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
  )

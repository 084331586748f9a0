import { execFile } from "node:child_process"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const BOOTSTRAP = path.join(ROOT, "infra", "bootstrap.mjs")

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** `node infra/bootstrap.mjs faults`, as `user` when given (this process must then be root). */
const faults = (env: NodeJS.ProcessEnv, user?: string) =>
  new Promise<Run>((resolve) => {
    const command = [process.execPath, BOOTSTRAP, "faults"]
    const [file, ...args] = user === undefined ? command : ["runuser", "-u", user, "--", ...command]
    execFile(file!, args, { cwd: ROOT, env, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    )
  })

/** One line on stderr naming what is missing, a failing status, no stack trace, and no test run. */
const expectOneLineRefusal = (run: Run) => {
  expect(run.code, run.stderr).toBe(1)
  const lines = run.stderr.trimEnd().split("\n")
  expect(lines, run.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(/^faults: the fault suite runs its own Postgres and NATS and needs /)
  expect(lines[0]).toContain("initdb and pg_ctl")
  expect(run.stderr).not.toMatch(/^\s+at /m)
  expect(run.stdout).not.toContain("RUN")
}

describe("npm run test:faults without Postgres's server binaries", { timeout: 90_000 }, () => {
  const missing = { ...process.env, PG_BINDIR: path.join(ROOT, "no-such-postgres-bin") }

  it.runIf(process.getuid?.() === 0)(
    "as a user other than root: one line saying what it needs, then a failing exit, before any test",
    async () => {
      const run = await faults(missing, "nobody")
      expectOneLineRefusal(run)
      expect(run.stderr).toContain(
        "as root it installs what is missing and runs Postgres as the postgres user",
      )
    },
  )

  it("as whoever runs this: the same one line, with nothing installed for a PG_BINDIR that is wrong", async () => {
    expectOneLineRefusal(await faults(missing))
  })
})

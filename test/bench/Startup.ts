import { spawn } from "node:child_process"
import { loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { dropIsolated, isolatedEnv } from "../support/TestPlatform.ts"
import { percentile } from "./Probes.ts"
import type { LatencyRow } from "./Roster.ts"

/**
 * How long a newcomer waits: `npm run -s cli -- --help` to its exit, and `npm start` to its `started` line on a
 * database with nothing to migrate, each against the floor of what it runs on, in the same run.
 */

const root = fileURLToPath(new URL("../..", import.meta.url))
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5)

/** Milliseconds from spawning `command` until `done` says so (its exit, or a line it printed), then it is stopped. */
const timeUntil = (
  command: string,
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined>,
  until: "exit" | RegExp,
) =>
  Effect.promise(
    () =>
      new Promise<number>((resolve, reject) => {
        const started = performance.now()
        const child = spawn(command, args, {
          cwd: root,
          env,
          stdio: ["ignore", "pipe", "pipe"],
          detached: true,
        })
        let output = ""
        let elapsed: number | undefined
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk
          if (until !== "exit" && elapsed === undefined && until.test(output)) {
            elapsed = performance.now() - started
            process.kill(-child.pid!, "SIGTERM")
          }
        })
        child.stderr.resume()
        child.once("exit", (code) => {
          if (until === "exit") elapsed = performance.now() - started
          if (elapsed === undefined || (until === "exit" && code !== 0)) {
            reject(new Error(`${command} ${args.join(" ")} exited with ${code}:\n${output}`))
          } else resolve(elapsed)
        })
      }),
  )

const samples = (run: Effect.Effect<number>) =>
  Effect.gen(function* () {
    const times: Array<number> = []
    for (let i = 0; i < RUNS; i++) times.push(yield* run)
    return times
  })

/** What a bare service does before it could say `started`: connect to Postgres and NATS, listen on four ports. */
const BARE_START = `
import http from "node:http"
import postgres from "postgres"
import { connect } from "@nats-io/transport-node"
const sql = postgres(process.env.DATABASE_URL)
await sql\`select 1\`
await connect({ servers: process.env.NATS_URL })
for (let i = 0; i < 4; i++) http.createServer((_, res) => res.end()).listen(0)
console.log("started")
`

export const startupLatencies = Effect.gen(function* () {
  const env = isolatedEnv({
    PARTNER_API_PORT: "0",
    INGEST_API_PORT: "0",
    ENROLLMENT_PORT: "0",
    CONSOLE_PORT: "0",
    PORTAL_PORT: "0",
    LOG_LEVEL: "info",
  })
  yield* Effect.addFinalizer(() => Effect.promise(() => dropIsolated(env)))
  const load = loadavg()[0]!.toFixed(1)
  const cliEnv = { ...env, LOG_LEVEL: "warn" }
  // Unmeasured: the first start migrates the database and fills Node's compile cache.
  yield* timeUntil("npm", ["start"], env, /"message":"started"/)
  const help = yield* samples(timeUntil("npm", ["run", "-s", "cli", "--", "--help"], cliEnv, "exit"))
  const npmFloor = yield* samples(timeUntil("npm", ["run", "-s", "env"], cliEnv, "exit"))
  const start = yield* samples(timeUntil("npm", ["start"], env, /"message":"started"/))
  const bare = yield* samples(
    timeUntil(`${root}node_modules/.bin/node`, ["--input-type=module", "-e", BARE_START], env, /started/),
  )
  const row = (name: string, ours: Array<number>, baseline: Array<number>, baselineName: string) =>
    ({
      name,
      p50: percentile(ours, 50),
      p99: percentile(ours, 99),
      baselineP50: percentile(baseline, 50),
      baselineP99: percentile(baseline, 99),
      baselineName,
    }) satisfies LatencyRow
  return {
    rows: [
      row(
        `startup: npm run -s cli -- --help to its exit, ${RUNS} runs (target < 1 s on an idle machine)`,
        help,
        npmFloor,
        "npm run -s env: npm starting and running one process",
      ),
      row(
        `startup: npm start to the started line, nothing to migrate, ${RUNS} runs (target < 5 s on an idle machine)`,
        start,
        bare,
        "the pinned node connecting to Postgres and NATS and listening on four ports",
      ),
    ],
    notes: [`startup: 1-minute load average ${load} when the startup runs began (2 cores)`],
  }
}).pipe(Effect.scoped)

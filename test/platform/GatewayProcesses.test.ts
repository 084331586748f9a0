import { request } from "node:http"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { restartAfter } from "../../backend/platform/Processes.ts"
import { type RunningProcess, spawnProcess } from "../support/ChildProcess.ts"
import { freePort } from "../support/Net.ts"
import { eventually } from "../support/Streams.ts"
import { dropIsolated, isolatedEnv } from "../support/TestPlatform.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

interface LogLine {
  readonly message: string
  readonly annotations: Record<string, unknown>
}

const lines = (service: RunningProcess): ReadonlyArray<LogLine> =>
  service
    .stdout()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .flatMap((line) => {
      try {
        const parsed = JSON.parse(line) as { message: unknown; annotations?: Record<string, unknown> }
        return [{ message: String(parsed.message), annotations: parsed.annotations ?? {} }]
      } catch {
        return []
      }
    })

/** A GET on a connection of its own (so each is handed to a gateway process in turn): status and body. */
const get = (port: number, path: string) =>
  Effect.promise(
    () =>
      new Promise<{ readonly status: number; readonly body: string }>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port, path, agent: false }, (response) => {
          let body = ""
          response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk))
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
        })
        req.once("error", reject)
        req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path} was not answered`)))
        req.end()
      }),
  )

/** The pids whose request lines answered `path`, from the debug lines of the gateway processes. */
const pidsAnswering = (service: RunningProcess, path: string) =>
  lines(service)
    .filter((line) => line.message === "request" && line.annotations.path === path)
    .map((line) => Number(line.annotations.pid))

/** Once the request lines of `count` answers to `path` are read, the pids that answered them. */
const answeredBy = (service: RunningProcess, path: string, count: number) =>
  Effect.map(
    eventually(
      Effect.sync(() => pidsAnswering(service, path)),
      (pids) => pids.length >= count,
    ),
    (pids) => new Set(pids),
  )

describe("gateway processes (HTTP_PROCESSES)", () => {
  it("replaces a process that ran 10 s at once, and one dying young after a wait doubling up to 30 s", () => {
    assert.deepStrictEqual(restartAfter(60_000, 0), { failures: 0, waitMs: 0 })
    assert.deepStrictEqual(restartAfter(10_000, 5), { failures: 0, waitMs: 0 })
    let failures = 0
    const waits: Array<number> = []
    for (let i = 0; i < 9; i++) {
      const next = restartAfter(2_000, failures)
      failures = next.failures
      waits.push(next.waitMs)
    }
    assert.deepStrictEqual(waits, [250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000])
  })

  it.live(
    "two processes share the ports and answer in turn; a killed one is replaced; SIGTERM stops every one",
    () =>
      Effect.gen(function* () {
        const metricsPort = yield* Effect.promise(freePort)
        const env = isolatedEnv({
          ROLES: "partner-api,ingest-api,workers",
          PARTNER_API_PORT: "0",
          INGEST_API_PORT: "0",
          METRICS_PORT: String(metricsPort),
          HTTP_PROCESSES: "2",
          LOG_LEVEL: "debug",
        })
        yield* Effect.addFinalizer(() => Effect.promise(() => dropIsolated(env)))
        const service = yield* spawnProcess(process.execPath, ["backend/main.ts"], { cwd: root, env })
        yield* service.waitFor("stdout", /"message":"started"/)

        const started = lines(service).find((line) => line.message === "started")!
        const pids = started.annotations.gateway_pids as ReadonlyArray<number>
        const ports = started.annotations.ports as Record<string, number>
        assert.strictEqual(started.annotations.gateway_processes, 2)
        assert.strictEqual(new Set(pids).size, 2)
        assert.notInclude(pids, service.pid)
        assert.strictEqual(started.annotations.roles, "partner-api,ingest-api,workers")
        assert.strictEqual(ports.metrics, metricsPort)
        // Each gateway process says it listens, on the same port for a role; the primary serves none.
        for (const role of ["partner-api", "ingest-api"]) {
          const listening = lines(service).filter(
            (line) => line.message === "listening" && line.annotations.role === role,
          )
          assert.deepStrictEqual(
            new Set(listening.map((line) => Number(line.annotations.pid))),
            new Set(pids),
          )
          assert.deepStrictEqual(
            new Set(listening.map((line) => line.annotations.port)),
            new Set([ports[role]]),
          )
        }

        // Connections are handed to the processes in turn: both answer health and readiness.
        for (let i = 0; i < 6; i++) {
          assert.strictEqual((yield* get(ports["ingest-api"]!, "/healthz")).status, 200)
          assert.strictEqual((yield* get(ports["partner-api"]!, "/readyz")).status, 200)
        }
        assert.deepStrictEqual(yield* answeredBy(service, "/healthz", 6), new Set(pids))
        assert.deepStrictEqual(yield* answeredBy(service, "/readyz", 6), new Set(pids))

        // METRICS_PORT on the primary sums every process's figures.
        const metrics = yield* get(metricsPort, "/metrics")
        assert.strictEqual(metrics.status, 200)
        assert.match(metrics.body, /http_requests_total\{role="ingest-api",method="GET",status="200"\} 6\b/)

        // A gateway process that dies: the port keeps answering, and it is replaced.
        const [killed, kept] = pids as [number, number]
        process.kill(killed, "SIGKILL")
        // A connection handed to it before the primary saw it die would go with it, as with any process killed.
        yield* service.waitFor("stdout", /"message":"gateway process exited; replacing it"/)
        for (let i = 0; i < 4; i++) {
          assert.strictEqual((yield* get(ports["ingest-api"]!, "/healthz")).status, 200)
        }
        yield* service.waitFor("stdout", /"message":"gateway process replaced"/)
        const exited = lines(service).find((line) => line.message === "gateway process exited; replacing it")!
        assert.strictEqual(exited.annotations.pid, killed)
        assert.strictEqual(exited.annotations.signal, "SIGKILL")
        const replacement = Number(
          lines(service).find((line) => line.message === "gateway process replaced")!.annotations.pid,
        )
        assert.notInclude([killed, kept, service.pid], replacement)
        for (let i = 0; i < 6; i++) {
          assert.strictEqual((yield* get(ports["ingest-api"]!, "/readyz")).status, 200)
        }
        assert.isTrue((yield* answeredBy(service, "/readyz", 12)).has(replacement))

        // SIGTERM to the primary alone stops the gateway processes too, each draining.
        process.kill(service.pid, "SIGTERM")
        const exit = yield* service.exited
        assert.deepStrictEqual(exit, { code: 0, signal: null }, service.stderr())
        assert.isFalse(yield* service.groupRunning)
        assert.notInclude(service.stderr(), "shutdown took longer")
      }).pipe(Effect.scoped),
    90_000,
  )
  it.live(
    "however many times the whole process group gets ctrl-C, every process drains and the primary exits 0",
    () =>
      Effect.gen(function* () {
        const env = isolatedEnv({
          ROLES: "partner-api,workers",
          PARTNER_API_PORT: "0",
          HTTP_PROCESSES: "2",
          LOG_LEVEL: "info",
        })
        yield* Effect.addFinalizer(() => Effect.promise(() => dropIsolated(env)))
        const service = yield* spawnProcess(process.execPath, ["backend/main.ts"], { cwd: root, env })
        yield* service.waitFor("stdout", /"message":"started"/)
        const repeating = yield* Effect.forkChild(
          Effect.forever(service.signal("SIGINT").pipe(Effect.andThen(Effect.sleep("5 millis")))),
        )
        const exit = yield* service.exited
        yield* Fiber.interrupt(repeating)
        assert.deepStrictEqual(exit, { code: 0, signal: null }, service.stderr())
        assert.isFalse(yield* service.groupRunning)
        assert.include(service.stdout(), `"actor drained"`)
        assert.notInclude(service.stdout(), "gateway process exited")
      }).pipe(Effect.scoped),
    60_000,
  )
})

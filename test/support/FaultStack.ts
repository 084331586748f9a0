import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { assert } from "@effect/vitest"
import { Context, Effect, Layer, References, Scope } from "effect"
import { appLayer } from "../../backend/App.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { authEnv } from "./Auth.ts"
import { type RunningProcess, spawnProcess } from "./ChildProcess.ts"
import { freePort } from "./Net.ts"
import { privateNats, storeDir } from "./PrivateNats.ts"
import { type PrivatePostgres, privatePostgres } from "./PrivatePostgres.ts"
import { ENROLLMENT_HOST } from "./Prospects.ts"
import { testCa } from "./Receiver.ts"
import { eventually } from "./Streams.ts"

/**
 * The fault suite's stack: a Postgres and NATS of its own (one server, or a three-node cluster with R3 streams),
 * the service as `npm start` runs it in two processes (the gateways; the workers), and the service's modules in
 * the test process for setting up and reading back (no role runs there). Faults stop, kill and restart these,
 * never the machine's shared servers.
 */

const root = fileURLToPath(new URL("../..", import.meta.url))

export interface ServiceProcess {
  readonly process: RunningProcess
  readonly roles: string
  readonly ports: Readonly<Record<string, number>>
}

/** `backend/main.ts` with `roles`, once it has logged `started`; killed with the scope. */
export const serviceProcess = (env: Record<string, string>, roles: string) =>
  Effect.gen(function* () {
    const child = yield* spawnProcess(process.execPath, ["backend/main.ts"], {
      cwd: root,
      env: { ...env, ROLES: roles, LOG_LEVEL: "info" },
    })
    yield* child.waitFor("stdout", /"message":"started"/)
    const line = child
      .stdout()
      .split("\n")
      .find((l) => l.includes('"message":"started"'))!
    const ports = (JSON.parse(line) as { annotations: { ports: Record<string, number> } }).annotations.ports
    return { process: child, roles, ports } satisfies ServiceProcess
  })

export interface NatsServers {
  /** The NATS_URL the service is given: every node. */
  readonly url: string
  readonly nodes: number
  /** Stops node `i` (SIGTERM, or SIGKILL for a crash) and waits until it is gone. */
  readonly stop: (i: number, signal?: "SIGTERM" | "SIGKILL") => Effect.Effect<void>
  /** Starts node `i` again on its port and store, once it is ready. */
  readonly start: (i: number) => Effect.Effect<void>
  /** Starts every node that does not run. */
  readonly ensureRunning: Effect.Effect<void>
}

/** One nats-server with JetStream on a free port, its store in a temporary folder. */
const singleNats = Effect.gen(function* () {
  const scope = yield* Effect.scope
  const dir = yield* storeDir("faults-nats-")
  const port = yield* Effect.promise(freePort)
  let server = yield* privateNats(port, dir)
  return {
    url: `nats://127.0.0.1:${port}`,
    nodes: 1,
    stop: (_i, signal = "SIGTERM") =>
      Effect.gen(function* () {
        yield* server.signal(signal)
        yield* server.exited
      }),
    start: () =>
      Effect.gen(function* () {
        server = yield* privateNats(port, dir).pipe(Scope.provide(scope))
      }),
    ensureRunning: Effect.gen(function* () {
      if (!(yield* server.groupRunning)) server = yield* privateNats(port, dir).pipe(Scope.provide(scope))
    }),
  } satisfies NatsServers
})

/**
 * infra/nats's three-node cluster (`node-a/b/c.conf`) with every port moved to a free one and each store in a
 * temporary folder; ready once JetStream has a metadata leader.
 */
const natsCluster = Effect.gen(function* () {
  const scope = yield* Effect.scope
  const dir = yield* storeDir("faults-nats-cluster-")
  const clientPorts = yield* Effect.forEach([0, 1, 2], () => Effect.promise(freePort))
  const routePorts = yield* Effect.forEach([0, 1, 2], () => Effect.promise(freePort))
  const names = ["a", "b", "c"]
  const configs = names.map((name, i) => {
    const file = join(dir, `node-${name}.conf`)
    mkdirSync(join(dir, name))
    writeFileSync(
      file,
      [
        `server_name: partner-nats-${name}`,
        `listen: 127.0.0.1:${clientPorts[i]}`,
        `jetstream { store_dir: "${join(dir, name)}" }`,
        "cluster {",
        "  name: partner-nats",
        `  listen: 127.0.0.1:${routePorts[i]}`,
        `  routes: [${routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(", ")}]`,
        "}",
        "",
      ].join("\n"),
    )
    return file
  })
  const startNode = (i: number) =>
    Effect.gen(function* () {
      const node = yield* spawnProcess("nats-server", ["-c", configs[i]!], { cwd: dir, env: process.env })
      yield* node.waitFor("stderr", /Server is ready/)
      return node
    }).pipe(Scope.provide(scope))
  const running: Array<RunningProcess> = yield* Effect.all([0, 1, 2].map(startNode), { concurrency: 3 })
  const url = clientPorts.map((p) => `nats://127.0.0.1:${p}`).join(",")
  yield* eventually(
    Effect.promise(async () => {
      const nc = await connect({ servers: url.split(","), timeout: 2000 }).catch(() => undefined)
      if (nc === undefined) return false
      const ok = await jetstreamManager(nc)
        .then((jsm) => jsm.getAccountInfo())
        .then(
          () => true,
          () => false,
        )
      await nc.close()
      return ok
    }),
    (ok) => ok,
  )
  return {
    url,
    nodes: 3,
    stop: (i, signal = "SIGTERM") =>
      Effect.gen(function* () {
        yield* running[i]!.signal(signal)
        yield* running[i]!.exited
      }),
    start: (i) =>
      Effect.gen(function* () {
        running[i] = yield* startNode(i)
      }),
    ensureRunning: Effect.forEach(
      [0, 1, 2],
      (i) =>
        Effect.gen(function* () {
          if (!(yield* running[i]!.groupRunning)) running[i] = yield* startNode(i)
        }),
      { discard: true },
    ),
  } satisfies NatsServers
})

export interface FaultStackShape {
  readonly env: Record<string, string>
  readonly postgres: PrivatePostgres
  readonly nats: NatsServers
  /** The gateways process running now. */
  readonly gateways: () => ServiceProcess
  /** The workers process running now. */
  readonly workers: () => ServiceProcess
  /**
   * `kill -9` of the workers process, once it is gone; a second one started by `addWorkers` is then the workers
   * process running now.
   */
  readonly killWorkers: Effect.Effect<void>
  /** Starts a workers process (the killed one's replacement). */
  readonly startWorkers: Effect.Effect<ServiceProcess>
  /** Starts a second workers process beside the one running, watched as the others are. */
  readonly addWorkers: Effect.Effect<ServiceProcess>
  /**
   * Brings back whatever a failed case left stopped or dead (servers, processes), so the next case starts whole;
   * each case runs it as a finalizer.
   */
  readonly restore: Effect.Effect<void>
  /** Fails, with each dead process's output, unless the gateways and the workers both still run. */
  readonly assertAlive: Effect.Effect<void>
  /**
   * Runs one step of a case, failing it as soon as a service process exits, or with `label` and what `context`
   * tells (and `diagnose` finds out then) when it has not finished within `seconds`: a stuck step says what it
   * waited for and where it is stuck, not just "timed out".
   */
  readonly step: <A, E, R, R2 = never>(
    label: string,
    effect: Effect.Effect<A, E, R>,
    options?: {
      readonly seconds?: number
      readonly context?: () => unknown
      readonly diagnose?: Effect.Effect<unknown, never, R2>
    },
  ) => Effect.Effect<A, E, R | R2>
}

export class FaultStack extends Context.Service<FaultStack, FaultStackShape>()("test/support/FaultStack") {}

const tail = (text: string, lines = 30) => text.split("\n").slice(-lines).join("\n")

/** Whether the process has not exited; its output tail when it has. */
const deathOf = (service: ServiceProcess) =>
  Effect.map(service.process.groupRunning, (running) =>
    running
      ? undefined
      : `the ${service.roles} process exited:\n${tail(service.process.stderr())}\n${tail(service.process.stdout(), 10)}`,
  )

/**
 * The stack for one test file: servers, then the service's modules in this process (they create and migrate the
 * database and provision the streams), then the gateways and the workers processes.
 */
export const faultStackLayer = (
  options: {
    readonly cluster?: boolean
    readonly env?: Record<string, string>
    /** The Postgres the stack runs on, instead of one server of its own (a primary and its standby). */
    readonly postgres?: Effect.Effect<PrivatePostgres, never, Scope.Scope>
  } = {},
) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const postgres = yield* options.postgres ?? privatePostgres
      const nats = yield* options.cluster ? natsCluster : singleNats
      const env = authEnv({
        DATABASE_URL: postgres.url("partner_service"),
        NATS_URL: nats.url,
        NATS_STREAM_REPLICAS: String(nats.nodes),
        ROLES: "partner-api,ingest-api",
        ENROLLMENT_HOST,
        WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
        // A fast backoff unit (the rate limit's window too), so a burst is not held back by either.
        WEBHOOK_BACKOFF_UNIT_MS: "5",
        WEBHOOK_TIMEOUT_MS: "5000",
        METRICS_PORT: "0",
        ...options.env,
      })
      const services = Layer.unwrap(
        Effect.map(Effect.service(AppConfig), (config) => appLayer({ ...config, roles: [] })),
      ).pipe(
        Layer.provideMerge(AppConfig.layerFrom(env)),
        Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
      )
      const stack = Layer.effect(
        FaultStack,
        Effect.gen(function* () {
          const scope = yield* Effect.scope
          // The helpers of test/support reach the gateways through the ports they find here.
          const ports = yield* ListeningPorts
          let gateways!: ServiceProcess
          let workers!: ServiceProcess
          let second: ServiceProcess | undefined
          const startGateways = serviceProcess(env, "partner-api,ingest-api").pipe(
            Scope.provide(scope),
            Effect.tap((started) =>
              Effect.sync(() => {
                gateways = started
                ports.set("partner-api", started.ports["partner-api"]!)
                ports.set("ingest-api", started.ports["ingest-api"]!)
              }),
            ),
          )
          const startWorkers = serviceProcess(env, "workers").pipe(
            Scope.provide(scope),
            Effect.tap((started) => Effect.sync(() => void (workers = started))),
          )
          yield* Effect.all([startGateways, startWorkers], { concurrency: 2 })
          const assertAlive = Effect.gen(function* () {
            const running = second === undefined ? [gateways, workers] : [gateways, workers, second]
            const deaths = (yield* Effect.forEach(running, deathOf)).filter((d) => d !== undefined)
            assert.deepStrictEqual(deaths, [], deaths.join("\n"))
          })
          const deathWatch = Effect.forever(Effect.andThen(assertAlive, Effect.sleep("500 millis")))
          return {
            env,
            postgres,
            nats,
            gateways: () => gateways,
            workers: () => workers,
            killWorkers: Effect.gen(function* () {
              yield* workers.process.signal("SIGKILL")
              yield* workers.process.exited
              if (second !== undefined) [workers, second] = [second, undefined]
            }),
            startWorkers,
            addWorkers: serviceProcess(env, "workers").pipe(
              Scope.provide(scope),
              Effect.tap((started) => Effect.sync(() => void (second = started))),
            ),
            restore: Effect.gen(function* () {
              yield* postgres.ensureRunning
              yield* nats.ensureRunning
              if (!(yield* gateways.process.groupRunning)) yield* startGateways
              if (!(yield* workers.process.groupRunning)) yield* startWorkers
            }),
            assertAlive,
            step: (label, effect, options = {}) =>
              Effect.gen(function* () {
                process.stdout.write(`[fault step] ${label}\n`)
                const seconds = options.seconds ?? 120
                return yield* Effect.raceFirst(effect, deathWatch).pipe(
                  Effect.timeoutOrElse({
                    duration: `${seconds} seconds`,
                    orElse: () =>
                      Effect.flatMap(options.diagnose ?? Effect.void, (diagnosis) =>
                        Effect.die(
                          new Error(
                            `${label}: not done after ${seconds} s; ${JSON.stringify({ ...(options.context?.() ?? {}), diagnosis })}`,
                          ),
                        ),
                      ),
                  }),
                )
              }),
          } satisfies FaultStackShape
        }),
      )
      return stack.pipe(Layer.provideMerge(services))
    }),
  )

/** A figure of this run for docs/reliability.md: printed, and kept in `.data/faults/figures.json`. */
export const recordFigure = (name: string, value: unknown) =>
  Effect.sync(() => {
    const dir = join(process.env.PARTNER_DATA_DIR ?? join(root, ".data"), "faults")
    mkdirSync(dir, { recursive: true })
    const file = join(dir, "figures.jsonl")
    writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), name, value })}\n`, { flag: "a" })
    process.stdout.write(`[fault figure] ${name}: ${JSON.stringify(value)}\n`)
  })

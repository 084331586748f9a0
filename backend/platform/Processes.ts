import cluster, { type Worker } from "node:cluster"
import { randomUUID } from "node:crypto"
import { type AddressInfo, createServer } from "node:net"
import { Clock, Effect } from "effect"
import type { AppConfigShape, Role } from "./Config.ts"
import { aggregatedMetrics, type MetricJson, ownMetrics, registry } from "./Observability.ts"

/**
 * The gateways on several processes (`HTTP_PROCESSES`): the primary forks that many gateway processes with
 * `node:cluster`, which share the gateways' ports (the primary accepts each connection and hands it to the next
 * fork in turn). The primary serves no gateway: it runs the roles that must run once (workers) and
 * `METRICS_PORT`, whose `/metrics` sums every process's, and replaces a fork that dies.
 */

const LISTENING = "partner-service:listening"
const METRICS_ASKED = "partner-service:metrics-asked"
const METRICS = "partner-service:metrics"

/** A fork that dies after running this long is replaced at once; sooner, the wait doubles up to the cap. */
const STABLE_MS = 10_000
const FIRST_RESTART_MS = 250
const MAX_RESTART_MS = 30_000
/** How long `/metrics` on the primary waits for a fork's figures before summing without them. */
const METRICS_WAIT_MS = 3_000

/**
 * How long to wait before replacing a gateway process that exited after `livedMs`, the `failures` of its slot so
 * far given: at once after a stable run (failures start again), else 250 ms doubling per quick death up to 30 s.
 */
export const restartAfter = (livedMs: number, failures: number) => {
  const next = livedMs >= STABLE_MS ? 0 : failures + 1
  return {
    failures: next,
    waitMs: next === 0 ? 0 : Math.min(MAX_RESTART_MS, FIRST_RESTART_MS * 2 ** (next - 1)),
  }
}

/** The roles a gateway process serves: every role but workers. */
export const gatewayRoles = (roles: ReadonlyArray<Role>): ReadonlyArray<Role> =>
  roles.filter((role) => role !== "workers")

/** The roles this process runs itself: all of them, or, in a primary with forks, those left to it. */
export const ownRoles = (config: AppConfigShape): ReadonlyArray<Role> =>
  forksGateways(config) ? config.roles.filter((role) => role === "workers") : config.roles

/** Whether this process is a primary that forks gateway processes. */
export const forksGateways = (config: AppConfigShape) =>
  cluster.isPrimary && config.httpProcesses > 1 && gatewayRoles(config.roles).length > 0

/** Whether this process is a gateway process forked by a primary. */
export const isGatewayProcess = () => cluster.isWorker

interface Message {
  readonly type?: unknown
  readonly id?: unknown
  readonly ports?: Record<string, number>
  readonly metrics?: ReadonlyArray<MetricJson>
}

/**
 * In a gateway process, once its gateways listen: tells the primary their ports, and from then on answers its
 * requests for this process's metrics.
 */
export const announceListening = (ports: ReadonlyMap<string, number>) => {
  if (!cluster.isWorker) return
  process.on("message", (message: Message) => {
    if (message?.type !== METRICS_ASKED) return
    void ownMetrics().then(
      (metrics) => process.connected && process.send?.({ type: METRICS, id: message.id, metrics }),
      () => process.connected && process.send?.({ type: METRICS, id: message.id, metrics: [] }),
    )
  })
  process.send?.({ type: LISTENING, ports: Object.fromEntries(ports) })
}

const forkMetrics = (worker: Worker) =>
  new Promise<ReadonlyArray<MetricJson> | undefined>((resolve) => {
    const id = randomUUID()
    const done = (metrics: ReadonlyArray<MetricJson> | undefined) => {
      clearTimeout(timer)
      worker.off("message", onMessage).off("exit", onExit)
      resolve(metrics)
    }
    const onMessage = (message: Message) => {
      if (message?.type === METRICS && message.id === id) done(message.metrics ?? [])
    }
    const onExit = () => done(undefined)
    const timer = setTimeout(() => done(undefined), METRICS_WAIT_MS)
    worker.on("message", onMessage).once("exit", onExit)
    try {
      worker.send({ type: METRICS_ASKED, id })
    } catch {
      done(undefined)
    }
  })

/**
 * What `/metrics` answers in this process: its own registry, or in a primary with gateway processes, the sum of
 * its registry and theirs (a fork that does not answer within 3 s is left out of that scrape).
 */
export const processMetrics = async (): Promise<string> => {
  const forks = cluster.isPrimary
    ? Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected())
    : []
  if (forks.length === 0) return registry.metrics()
  const theirs = await Promise.all(forks.map(forkMetrics))
  return aggregatedMetrics(theirs.filter((m): m is ReadonlyArray<MetricJson> => m !== undefined))
}

export interface GatewayProcesses {
  /** The gateways' ports, as the first gateway process bound them (the forks share them). */
  readonly ports: ReadonlyMap<string, number>
  readonly pids: ReadonlyArray<number>
}

const PORT_VARIABLES = {
  "partner-api": "PARTNER_API_PORT",
  "ingest-api": "INGEST_API_PORT",
  enrollment: "ENROLLMENT_PORT",
  console: "CONSOLE_PORT",
} as const

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "0.0.0.0", () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })

/**
 * A free port for each gateway whose port is 0: forks asking for port 0 at the same address would all share one
 * port, whatever their role. The URLs and audiences derived from the ports go with them as the primary read them,
 * so every process agrees on them.
 */
const chosenPorts = async (config: AppConfigShape): Promise<Record<string, string>> => {
  const chosen: Record<string, string> = {}
  for (const [role, variable] of Object.entries(PORT_VARIABLES)) {
    const wanted = config.ports[role as keyof typeof PORT_VARIABLES]
    if (wanted === 0 && config.roles.includes(role as Role)) chosen[variable] = String(await freePort())
  }
  return {
    ...chosen,
    PUBLIC_BASE_URL: config.publicBaseUrl,
    INGEST_BASE_URL: config.ingestBaseUrl,
    ENROLLMENT_HOST: config.enrollmentHost,
    CONSOLE_BASE_URL: config.consoleBaseUrl,
    PARTNER_API_AUDIENCE: config.audiences.partner,
    INGEST_API_AUDIENCE: config.audiences.ingest,
  }
}

interface Slot {
  worker: Worker | undefined
  startedAt: number
  failures: number
  restart: NodeJS.Timeout | undefined
}

/**
 * In the primary: forks `config.httpProcesses` gateway processes serving the gateway roles, and succeeds once
 * every one listens (a fork that exits before it listens fails the start). Afterwards a fork that exits is logged
 * and replaced, after a wait that doubles while replacements keep dying young. When the scope closes (SIGTERM
 * or SIGINT), every fork is told to stop and awaited: each drains as a single process does.
 */
export const gatewayProcesses = (config: AppConfigShape) =>
  Effect.gen(function* () {
    const services = yield* Effect.context<never>()
    const log = (effect: Effect.Effect<void>) => void Effect.runForkWith(services)(effect)
    const now = () => Effect.runSyncWith(services)(Clock.currentTimeMillis)
    const env = {
      ROLES: gatewayRoles(config.roles).join(","),
      HTTP_PROCESSES: "1",
      // The primary serves METRICS_PORT for every process.
      METRICS_PORT: "",
      ...(yield* Effect.promise(() => chosenPorts(config))),
    }
    const state = { stopping: false }
    // Set at the signal itself, before any fork it reached has exited, so none of them is replaced.
    const onSignal = () => {
      state.stopping = true
    }
    process.on("SIGTERM", onSignal).on("SIGINT", onSignal)
    const slots: Array<Slot> = Array.from({ length: config.httpProcesses }, () => ({
      worker: undefined,
      startedAt: 0,
      failures: 0,
      restart: undefined,
    }))

    const fork = (
      slot: Slot,
      onListening: (ports: Record<string, number>) => void,
      onEarlyExit: () => void,
    ) => {
      const worker = cluster.fork(env)
      slot.worker = worker
      slot.startedAt = now()
      let listening = false
      worker.on("message", (message: Message) => {
        if (message?.type !== LISTENING || listening) return
        listening = true
        onListening(message.ports ?? {})
      })
      worker.once("exit", (code, signal) => {
        if (slot.worker === worker) slot.worker = undefined
        if (!listening) return onEarlyExit()
        if (state.stopping) return
        const { failures, waitMs: wait } = restartAfter(now() - slot.startedAt, slot.failures)
        slot.failures = failures
        log(
          Effect.logWarning("gateway process exited; replacing it").pipe(
            Effect.annotateLogs({ pid: worker.process.pid, code, signal, restart_in_ms: wait }),
          ),
        )
        slot.restart = setTimeout(() => replace(slot), wait)
      })
      return worker
    }

    const replace = (slot: Slot) => {
      slot.restart = undefined
      if (state.stopping) return
      const worker = fork(
        slot,
        () =>
          log(
            Effect.logInfo("gateway process replaced").pipe(Effect.annotateLogs({ pid: worker.process.pid })),
          ),
        // A replacement that cannot listen is retried like one that died.
        () => {
          if (state.stopping) return
          const { failures, waitMs: wait } = restartAfter(0, slot.failures)
          slot.failures = failures
          log(
            Effect.logWarning("gateway process exited before it listened; retrying").pipe(
              Effect.annotateLogs({ pid: worker.process.pid, restart_in_ms: wait }),
            ),
          )
          slot.restart = setTimeout(() => replace(slot), wait)
        },
      )
    }

    const stopAll = Effect.callback<void>((resume) => {
      state.stopping = true
      for (const slot of slots) clearTimeout(slot.restart)
      const running = slots.flatMap((slot) =>
        slot.worker && slot.worker.process.exitCode === null && slot.worker.process.signalCode === null
          ? [slot.worker]
          : [],
      )
      let left = running.length
      if (left === 0) return resume(Effect.void)
      for (const worker of running) {
        worker.once("exit", () => {
          if (--left === 0) resume(Effect.void)
        })
        worker.process.kill("SIGTERM")
      }
    })

    const ports = yield* Effect.acquireRelease(
      Effect.callback<ReadonlyMap<string, number>>((resume) => {
        let waiting = slots.length
        let first: Record<string, number> | undefined
        let failed = false
        for (const slot of slots) {
          fork(
            slot,
            (ports) => {
              first ??= ports
              if (--waiting === 0 && !failed) resume(Effect.succeed(new Map(Object.entries(first))))
            },
            () => {
              if (failed) return
              failed = true
              resume(Effect.die(new Error("a gateway process exited before its gateways listened")))
            },
          )
        }
      }),
      () => stopAll,
    ).pipe(Effect.onError(() => stopAll))
    return {
      ports,
      pids: slots.flatMap((slot) =>
        slot.worker?.process.pid === undefined ? [] : [slot.worker.process.pid],
      ),
    } satisfies GatewayProcesses
  })

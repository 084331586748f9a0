import { fileURLToPath } from "node:url"
import { Effect, Layer } from "effect"
import { Db } from "../../backend/platform/Db.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { type RunningProcess, spawnProcess } from "../support/ChildProcess.ts"
import { enginePlatform } from "../support/WebhookEngine.ts"
import { cpuOfNamed, machineCpu, statCpu } from "./Probes.ts"
import { benchEndpoints, startReceiverThread } from "./WebhookLoad.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** Events (one delivery each) of a round, spread over the webhook bench's endpoints (20 by default). */
const DELIVERIES = Number(process.env.BENCH_WORKERS_DELIVERIES ?? 20_000)
/** Alternating rounds of one workers process then two; each side's best round is its figure. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_WORKERS_ROUNDS ?? 2))

/** CPU time (ms) so far of the workers processes, Postgres, nats-server and the whole machine. */
const cpuNow = async (pids: ReadonlyArray<number>) => {
  let workers = 0
  for (const pid of pids) workers += await statCpu(`/proc/${pid}/stat`)
  const machine = await machineCpu()
  return {
    workers,
    postgres: await cpuOfNamed("postgres"),
    nats: await cpuOfNamed("nats-server"),
    machine: machine.busy,
    steal: machine.steal,
    all: machine.total,
  }
}

/** A write-ahead log position (`X/Y`, hexadecimal halves) in bytes. */
const lsnBytes = (lsn: string) => {
  const [high = "0", low = "0"] = lsn.split("/")
  return parseInt(high, 16) * 2 ** 32 + parseInt(low, 16)
}

interface Round {
  readonly processes: number
  readonly rate: number
  /** CPU µs per delivery by where it was spent. */
  readonly workers: number
  readonly postgres: number
  readonly nats: number
  readonly machine: number
  /** Of the machine's CPU time meanwhile, the share the hypervisor stole. */
  readonly steal: number
  /** Write-ahead log bytes per delivery (the whole server's: nothing else may run). */
  readonly walBytes: number
  /** Bytes per delivery in Postgres (the delivery and its attempt, indexes and TOAST included). */
  readonly postgresBytes: number
  /** Bytes per message of `EVENTS` (an event) and `WEBHOOKS` (an attempt), as JetStream stores them. */
  readonly eventBytes: number
  readonly attemptBytes: number
}

/**
 * The webhook engine as the service runs it (`backend/main.ts`, the workers role alone), as one process and as
 * two sharing its consumers, on a backlog of `BENCH_WORKERS_DELIVERIES` events routed to signed deliveries to
 * the receiver thread: deliveries per second and CPU per delivery of the workers processes, Postgres and
 * nats-server, from the moment every process has started until every delivery is recorded. The capacity model
 * (`docs/capacity.md`) is built on these figures.
 */
export const workersProcessesThroughput = Effect.gen(function* () {
  const receiver = yield* Effect.acquireRelease(Effect.promise(startReceiverThread), (r) =>
    Effect.promise(r.close),
  )
  const origin = `https://127.0.0.1:${receiver.port}`

  const measure = (env: Record<string, string>, processes: number) =>
    Effect.gen(function* () {
      const nats = yield* Nats
      const client = yield* NatsClient
      const db = yield* Db
      // The backlog is on EVENTS before any workers process starts.
      const { publishBacklog } = yield* benchEndpoints(origin, "bench-workers")
      yield* publishBacklog(DELIVERIES)
      yield* Effect.promise(() => receiver.reset(DELIVERIES))
      const delivered = () =>
        Effect.runPromise(
          db.query(
            (sql) => sql`select count(*)::int as n from webhook_deliveries where status = 'delivered'`,
          ),
        ).then(([row]) => Number(row?.n))
      const services: Array<RunningProcess> = []
      for (let p = 0; p < processes; p++) {
        services.push(
          yield* spawnProcess(process.execPath, ["backend/main.ts"], {
            cwd: root,
            env: { ...env, ROLES: "workers", METRICS_PORT: "", LOG_LEVEL: "info" },
          }),
        )
      }
      yield* Effect.forEach(services, (s) => s.waitFor("stdout", /"message":"started"/), { discard: true })
      const pids = services.map((s) => s.pid)
      const walNow = () =>
        Effect.runPromise(db.query((sql) => sql`select pg_current_wal_lsn()::text as lsn`)).then(([row]) =>
          lsnBytes(String(row!.lsn)),
        )
      const result = yield* Effect.promise(async () => {
        const [from, walFrom, doneBefore] = [await cpuNow(pids), await walNow(), await delivered()]
        const start = performance.now()
        const waitUntil = async (check: () => Promise<boolean>, everyMs: number) => {
          const deadline = performance.now() + 600_000
          while (!(await check())) {
            if (performance.now() > deadline) throw new Error("workers bench: timed out waiting")
            await new Promise((r) => setTimeout(r, everyMs))
          }
        }
        await waitUntil(() => receiver.stats().then((s) => s.count >= DELIVERIES), 20)
        await waitUntil(() => delivered().then((n) => n >= DELIVERIES), 20)
        const seconds = (performance.now() - start) / 1000
        const [to, walTo] = [await cpuNow(pids), await walNow()]
        const count = DELIVERIES - doneBefore
        const us = (key: "workers" | "postgres" | "nats" | "machine") =>
          ((to[key] - from[key]) * 1000) / count
        return {
          processes,
          rate: count / seconds,
          workers: us("workers"),
          postgres: us("postgres"),
          nats: us("nats"),
          machine: us("machine"),
          steal: (to.steal - from.steal) / (to.all - from.all),
          walBytes: (walTo - walFrom) / count,
        }
      })
      yield* Effect.forEach(services, (s) => s.signal("SIGTERM"), { discard: true })
      yield* Effect.forEach(services, (s) => s.exited, { discard: true })
      // What a delivery keeps on disk, for the capacity model's storage.
      const [size] = yield* db.query(
        (sql) => sql`
          select pg_total_relation_size('webhook_deliveries') + pg_total_relation_size('webhook_attempts') as bytes,
                 (select count(*) from webhook_deliveries) as deliveries`,
      )
      const perMessage = (stream: string) =>
        Effect.promise(() => client.jsm.streams.info(nats.streamName(stream))).pipe(
          Effect.map((info) => info.state.bytes / Math.max(1, info.state.messages)),
        )
      return {
        ...result,
        postgresBytes: Number(size!.bytes) / Number(size!.deliveries),
        eventBytes: yield* perMessage("EVENTS"),
        attemptBytes: yield* perMessage("WEBHOOKS"),
      }
    })

  // Each round on a database and prefix of its own, so both start from fresh consumers and empty tables.
  const round = (processes: number) =>
    Effect.gen(function* () {
      const platform = enginePlatform({
        WEBHOOK_RATE_LIMIT_PER_MINUTE: "1000000",
        WEBHOOK_BACKOFF_UNIT_MS: "1000",
      })
      const context = yield* Layer.build(platform.layer)
      return yield* Effect.provide(measure(platform.env, processes), context)
    }).pipe(Effect.scoped)

  // Rounds alternate one process and two, so a neighbour's burst on the machine does not land on one side only.
  const rounds: Array<Round> = []
  for (let r = 0; r < ROUNDS; r++) {
    rounds.push(yield* round(1))
    rounds.push(yield* round(2))
  }
  const best = (processes: number) =>
    rounds.filter((r) => r.processes === processes).reduce((a, b) => (b.rate > a.rate ? b : a))
  const [one, two] = [best(1), best(2)]
  const us = (n: number) => `${Math.round(n)} µs`
  const notes = rounds.map(
    (r) =>
      `- ${r.processes} workers process(es): ${Math.round(r.rate).toLocaleString("en-US")} deliveries/s; CPU per ` +
      `delivery: workers ${us(r.workers)}, Postgres ${us(r.postgres)}, nats-server ${us(r.nats)}, the machine ` +
      `${us(r.machine)} (the receiver and the bench's polls included; ${(100 * r.steal).toFixed(0)}% stolen); ` +
      `written per delivery: WAL ${Math.round(r.walBytes)} B; stored per delivery: Postgres ${Math.round(r.postgresBytes)} B, EVENTS ${Math.round(r.eventBytes)} B an ` +
      `event, WEBHOOKS ${Math.round(r.attemptBytes)} B an attempt message`,
  )
  return {
    rows: [
      {
        name: `webhooks, two workers processes vs one: ${DELIVERIES} events -> signed deliveries (backend/main.ts, ROLES=workers, one endpoint per owner)`,
        ours: two.rate,
        baseline: one.rate,
        unit: "deliveries/s",
        baselineName: "the same with one workers process",
      },
    ],
    notes,
  }
})

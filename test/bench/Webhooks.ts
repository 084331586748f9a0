import { createHmac, randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { rootCertificates } from "node:tls"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { Effect, Fiber, Layer } from "effect"
import { Agent } from "undici"
import { databaseUrl } from "../../backend/platform/DatabaseUrl.ts"
import { Db } from "../../backend/platform/Db.ts"
import { actorLayer } from "../../backend/platform/Actor.ts"
import { RouterRepo } from "../../backend/webhooks/delivery/RouterRepo.ts"
import { EventRouter, routerActor } from "../../backend/webhooks/delivery/Router.ts"
import { webhookWorkersLayer } from "../../backend/webhooks/delivery/Workers.ts"
import { testCa } from "../support/Receiver.ts"
import { bullPeer, floor, type PeerEvent } from "./Peers.ts"
import {
  benchEndpoints,
  body,
  ENDPOINTS,
  now,
  paced,
  type ReceiverThread,
  startReceiverThread,
} from "./WebhookLoad.ts"
import { baseDatabaseUrl, natsUrl } from "../support/TestPlatform.ts"
import { enginePlatform } from "../support/WebhookEngine.ts"
import {
  countGcPauses,
  countSocketWrites,
  cpuOfNamed,
  cpuProfile,
  machineCpu,
  percentile,
  statCpu,
} from "./Probes.ts"
import type { LatencyRow } from "./Roster.ts"
import { statementCounter } from "./Statements.ts"

/**
 * The delivery engine against a local HTTPS receiver (in a worker thread, so it does not share the engine's
 * event loop), on a database and prefix of its own:
 *
 *   1. raw: `BENCH_WEBHOOK_DELIVERIES` signed POSTs from undici (one keep-alive agent, `BENCH_WEBHOOK_INFLIGHT` in
 *      flight) to the receiver: the ceiling for any webhook sender on this machine;
 *   2. deliveries: as many events published to `EVENTS` (one delivery each, spread over `BENCH_WEBHOOK_ENDPOINTS`
 *      owners' endpoints) before the workers start; then the router and the delivery actor (in this process)
 *      route, sign, POST and record them: deliveries per second until every record says `delivered`. A warm-up
 *      round of `BENCH_WEBHOOK_WARMUP` events comes first, as the raw phase warms up with 2,000 POSTs; then
 *      `BENCH_WEBHOOK_ROUNDS` rounds, each on a database and prefix of its own, alternate with raw bursts, and the
 *      round with the median ratio to the bursts either side of it is reported;
 *   3. latency: events published at `BENCH_WEBHOOK_RATE` per second for `BENCH_WEBHOOK_SECONDS`, from the publish
 *      to the first attempt's arrival at the receiver; next to a raw signed POST's latency at the same rate.
 *
 * `BENCH_WEBHOOK_CPU_PROFILE=<file>` writes a V8 CPU profile of the first round. Figures are printed, never
 * asserted; the targets are >= 5,000 deliveries/s (>= 0.2x raw), p50 <= 15 ms and p99 <= 100 ms at 1,000/s.
 */
const DELIVERIES = Number(process.env.BENCH_WEBHOOK_DELIVERIES ?? 20_000)
/** Events of the engine's warm-up round, before the measured one (the raw phase warms up with 2,000 POSTs). */
const WARMUP = Number(process.env.BENCH_WEBHOOK_WARMUP ?? 2000)
const INFLIGHT = Number(process.env.BENCH_WEBHOOK_INFLIGHT ?? 256)
const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 1000)
const SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 5)
/** Measured rounds of the engine, alternating with raw bursts; the median round (by its ratio) is reported. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_WEBHOOK_ROUNDS ?? 3))
const PROFILE = process.env.BENCH_WEBHOOK_CPU_PROFILE
/** `BENCH_WEBHOOK_STAGED=1`: route the whole backlog before the delivery actor starts (each stage's own pace). */
const STAGED = process.env.BENCH_WEBHOOK_STAGED === "1"
/** Jobs at once the BullMQ peer's worker is tried with; the best is reported. */
const PEER_CONCURRENCY = (process.env.BENCH_PEER_CONCURRENCY ?? "16,64,256")
  .split(",")
  .map(Number)
  .filter((n) => n > 0)
/** Attempt messages the floor's consumer keeps in hand. */
const FLOOR_IN_HAND = Number(process.env.BENCH_FLOOR_IN_HAND ?? 512)
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

const secretForRaw = "whsec_raw-baseline-secret-of-some-length-000000000000"

/** One signed POST as a bare sender makes it: HMAC over the body, the service's headers. */
const rawPost = (agent: Agent, origin: string, payload: string, i: number) => {
  const timestamp = Math.floor(Date.now() / 1000)
  const signature = createHmac("sha256", secretForRaw).update(`${timestamp}.${payload}`).digest("hex")
  return agent
    .request({
      origin,
      path: "/raw",
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "X-Webhook-Event": "move_out.initiated",
        "X-Webhook-Delivery": String(i),
        "X-Webhook-Timestamp": String(timestamp),
        "X-Webhook-Signature": `t=${timestamp},v1=${signature}`,
      },
      body: payload,
    })
    .then((response) => response.body.dump())
}

/** Runs `send(i)` for i < count, `inflight` at a time; seconds taken. */
const saturate = async (count: number, inflight: number, send: (i: number) => Promise<unknown>) => {
  let next = 0
  const start = performance.now()
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < count) await send(next++)
    }),
  )
  return (performance.now() - start) / 1000
}

/**
 * CPU time (ms) so far of the engine's thread, the receiver's thread, this whole process, Postgres, nats-server
 * and the machine (busy, and stolen by the hypervisor, of all there was).
 */
const cpuShares = async (receiver: ReceiverThread) => {
  const usage = process.cpuUsage()
  const machine = await machineCpu()
  return {
    engine: await statCpu(`/proc/${process.pid}/task/${process.pid}/stat`),
    receiver: await statCpu(`${receiver.thread}/stat`),
    process: (usage.user + usage.system) / 1000,
    postgres: await cpuOfNamed("postgres"),
    nats: await cpuOfNamed("nats-server"),
    redis: await cpuOfNamed("redis-server"),
    machine: machine.busy,
    steal: machine.steal,
    all: machine.total,
  }
}

type CpuShares = Awaited<ReturnType<typeof cpuShares>>

/** CPU time per delivery (µs) between two readings, by where it was spent. */
const perDelivery = (from: CpuShares, to: CpuShares, deliveries: number) => {
  const us = (key: keyof CpuShares) => ((to[key] - from[key]) * 1000) / deliveries
  return {
    engine: us("engine"),
    receiver: us("receiver"),
    // libuv's pool and V8's helpers (the garbage collector's, mostly).
    otherThreads: us("process") - us("engine") - us("receiver"),
    postgres: us("postgres"),
    nats: us("nats"),
    redis: us("redis"),
    machine: us("machine"),
    /** The machine's CPU time the hypervisor took meanwhile, as a share of all of it. */
    steal: (to.steal - from.steal) / (to.all - from.all),
  }
}
type CpuPerDelivery = ReturnType<typeof perDelivery>

const mean = (a: CpuPerDelivery, b: CpuPerDelivery): CpuPerDelivery => ({
  engine: (a.engine + b.engine) / 2,
  receiver: (a.receiver + b.receiver) / 2,
  otherThreads: (a.otherThreads + b.otherThreads) / 2,
  postgres: (a.postgres + b.postgres) / 2,
  nats: (a.nats + b.nats) / 2,
  redis: (a.redis + b.redis) / 2,
  machine: (a.machine + b.machine) / 2,
  steal: (a.steal + b.steal) / 2,
})

const percent = (share: number) => `${(100 * share).toFixed(0)}%`

const waitFor = async (check: () => Promise<boolean>, timeoutMs: number, everyMs = 20) => {
  const deadline = performance.now() + timeoutMs
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error("webhook bench: timed out waiting")
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

export const webhookBench = Effect.gen(function* () {
  const receiver = yield* Effect.acquireRelease(Effect.promise(startReceiverThread), (r) =>
    Effect.promise(r.close),
  )
  const origin = `https://127.0.0.1:${receiver.port}`
  const agent = yield* Effect.acquireRelease(
    Effect.sync(
      () =>
        new Agent({
          connections: 64,
          keepAliveTimeout: 30_000,
          connect: { ca: [...rootCertificates, readFileSync(testCa().caFile, "utf8")] },
        }),
    ),
    (a) => Effect.promise(() => a.close()),
  )
  const payloads = Array.from({ length: DELIVERIES }, (_, i) => body("bench-raw", i))

  // 1. raw signed POSTs (warm the connections first)
  yield* Effect.promise(() =>
    saturate(2000, INFLIGHT, (i) => rawPost(agent, origin, payloads[i % DELIVERIES]!, i)),
  )
  const rawBurst = Effect.gen(function* () {
    const from = yield* Effect.promise(() => cpuShares(receiver))
    const seconds = yield* Effect.promise(() =>
      saturate(DELIVERIES, INFLIGHT, (i) => rawPost(agent, origin, payloads[i]!, i)),
    )
    const to = yield* Effect.promise(() => cpuShares(receiver))
    return { rate: DELIVERIES / seconds, cpu: perDelivery(from, to, DELIVERIES) }
  })

  // 2. deliveries, from a backlog of events; 3. latency at a steady rate (the last round only)
  const deliveries = (size: number, options: { readonly profile: boolean; readonly latency: boolean }) =>
    Effect.gen(function* () {
      const db = yield* Db
      const { publishEvent, publishBacklog } = yield* benchEndpoints(origin, "bench")
      yield* publishBacklog(size)
      yield* Effect.promise(() => receiver.reset(size))
      // Taken before the statement counter wraps `db.query`: the bench's own polls are not the engine's statements.
      const benchQuery = db.query
      const delivered = () =>
        Effect.runPromise(
          benchQuery(
            (sql) => sql`select count(*)::int as n from webhook_deliveries where status = 'delivered'`,
          ),
        ).then(([row]) => Number(row?.n))
      const start = performance.now()
      const startedAt = now()
      let sendingFrom = start
      let routerCpu: CpuPerDelivery | undefined
      let routedSeconds: number | undefined
      if (STAGED) {
        // Waits until the router has made every delivery (counting the rows: a query the other mode leaves out,
        // as it would load the Postgres it measures).
        const routed = Effect.promise(() =>
          waitFor(
            () =>
              Effect.runPromise(
                db.query((sql) => sql`select count(*)::int as n from webhook_deliveries`),
              ).then(([row]) => Number(row?.n) >= size),
            600_000,
            100,
          ).then(() => (performance.now() - start) / 1000),
        )
        const routedFiber = yield* Effect.forkScoped(routed)
        // The router alone first, then the rest: each stage's pace by itself.
        const routerFrom = yield* Effect.promise(() => cpuShares(receiver))
        yield* Layer.build(
          actorLayer(routerActor).pipe(Layer.provide(EventRouter.layer), Layer.provide(RouterRepo.layer)),
        )
        routedSeconds = yield* Fiber.join(routedFiber)
        routerCpu = perDelivery(routerFrom, yield* Effect.promise(() => cpuShares(receiver)), size)
        sendingFrom = performance.now()
      }
      // Of the whole phase, or of the delivery actor's stage alone.
      const stopProfile =
        PROFILE && options.profile ? yield* Effect.promise(() => cpuProfile(PROFILE, 200)) : undefined
      const cpuFrom = yield* Effect.promise(() => cpuShares(receiver))
      const stopGc = countGcPauses()
      const stopCounting = countSocketWrites({
        postgres: databaseUrl(baseDatabaseUrl).hosts[0]?.port ?? 5432,
        nats: Number(new URL(natsUrl).port || 4222),
        receiver: receiver.port,
      })
      const statements = statementCounter(db)
      yield* Layer.build(webhookWorkersLayer)
      yield* Effect.promise(() => waitFor(() => receiver.stats().then((s) => s.count >= size), 600_000))
      const arrivedSeconds = (performance.now() - start) / 1000
      yield* Effect.promise(() => waitFor(() => delivered().then((n) => n >= size), 120_000))
      const recordedSeconds = (performance.now() - start) / 1000
      statements.stop()
      const sendingSeconds = (performance.now() - sendingFrom) / 1000
      const cpuTo = yield* Effect.promise(() => cpuShares(receiver))
      const writes = stopCounting()
      const gc = stopGc()
      const cpu = perDelivery(cpuFrom, cpuTo, size)
      if (routedSeconds === undefined) {
        // When the router made the last delivery: the latest row's routing statement (its transaction's start).
        const [last] = yield* db.query(
          (sql) => sql`select extract(epoch from max(created_at)) * 1000 as at from webhook_deliveries`,
        )
        routedSeconds = (Number(last?.at) - startedAt) / 1000
      }
      if (stopProfile) yield* Effect.promise(stopProfile)

      // 3. latency at a steady rate, the workers running
      const [last] = yield* db.query(
        (sql) => sql`select coalesce(max(id), 0)::bigint as id from webhook_deliveries`,
      )
      const backlogLastId = Number(last?.id ?? 0)
      const latencyEvents = options.latency ? RATE * SECONDS : 0
      const offset = size
      yield* Effect.promise(() => receiver.reset(offset + latencyEvents))
      const loopDelay = monitorEventLoopDelay({ resolution: 1 })
      loopDelay.enable()
      const started = yield* Effect.promise(() => paced(latencyEvents, RATE, (i) => publishEvent(offset + i)))
      loopDelay.disable()
      yield* Effect.promise(() =>
        waitFor(() => receiver.stats().then((s) => s.arrivals.subarray(offset).every((a) => a > 0)), 120_000),
      )
      const arrivals = (yield* Effect.promise(() => receiver.stats())).arrivals.subarray(offset)
      const latencies = Array.from(started, (t, i) => arrivals[i]! - t)
      // Where the latency goes: publish -> delivery row (router), row -> request started (delivery actor).
      const stages = yield* db.query(
        (sql) => sql<Array<{ i: number; created: number; attempted: number }>>`
          select split_part(convert_from(payload, 'UTF8')::json -> 'data' -> 'move_out' ->> 'external_id', '-', 2)::int
                   as i,
                 extract(epoch from created_at) * 1000 as created,
                 extract(epoch from last_attempted_at) * 1000 as attempted
          from webhook_deliveries where id > ${backlogLastId}`,
      )
      const routedAfter: Array<number> = []
      const claimedAfter: Array<number> = []
      for (const row of stages) {
        const i = Number(row.i) - offset
        if (!(i >= 0 && i < latencyEvents)) continue
        routedAfter.push(Number(row.created) - started[i]!)
        claimedAfter.push(Number(row.attempted) - Number(row.created))
      }
      const failures = yield* db.query(
        (sql) => sql<Array<{ reason: string; n: number }>>`
          select coalesce(failure_reason, 'none') as reason, count(*)::int as n from webhook_attempts
          where failure_reason is not null group by 1 order by 2 desc limit 5`,
      )
      return {
        routedSeconds,
        sendingSeconds,
        cpu,
        routerCpu,
        writes,
        gc,
        arrivedSeconds,
        recordedSeconds,
        latencies,
        routedAfter,
        claimedAfter,
        loopDelay: [loopDelay.percentile(50) / 1e6, loopDelay.percentile(99) / 1e6],
        failures: failures.map((f) => `${f.n} x ${f.reason}`),
        statements: statements.notes(size, "delivery"),
      }
    })
  const round = (size: number, options: { readonly profile: boolean; readonly latency: boolean }) =>
    Effect.gen(function* () {
      const platform = enginePlatform({
        WEBHOOK_RATE_LIMIT_PER_MINUTE: "1000000",
        WEBHOOK_BACKOFF_UNIT_MS: "1000",
      })
      const context = yield* Layer.build(platform.layer)
      return yield* Effect.provide(deliveries(size, options), context)
    }).pipe(Effect.scoped)
  // The engine warms up as the raw sender did (its code compiled, its pools grown), on a database and prefix of
  // its own; so does every round, so that each starts from fresh consumers like the first start of a deployment.
  yield* round(WARMUP, { profile: false, latency: false })
  // Rounds alternate with raw bursts, each round against the mean of the bursts either side of it: this machine's
  // speed drifts within a minute, and a round and a baseline measured apart can land in different weather.
  let before = yield* rawBurst
  const rounds: Array<{
    readonly result: Effect.Success<ReturnType<typeof deliveries>>
    readonly rate: number
    readonly rawRate: number
    readonly rawCpu: CpuPerDelivery
  }> = []
  for (let r = 0; r < ROUNDS; r++) {
    const result = yield* round(DELIVERIES, { profile: r === 0, latency: r === ROUNDS - 1 })
    const after = yield* rawBurst
    rounds.push({
      result,
      rate: DELIVERIES / result.recordedSeconds,
      rawRate: (before.rate + after.rate) / 2,
      rawCpu: mean(before.cpu, after.cpu),
    })
    before = after
  }
  const ratioOf = (r: (typeof rounds)[number]) => r.rate / r.rawRate
  const {
    result,
    rate: ours,
    rawRate: raw,
    rawCpu,
  } = [...rounds].sort((a, b) => ratioOf(a) - ratioOf(b))[Math.floor(rounds.length / 2)]!
  const { latencies, loopDelay, routedAfter, claimedAfter } = rounds[rounds.length - 1]!.result
  const failures = rounds.flatMap((r) => r.result.failures)

  // raw latency at the same rate
  yield* Effect.promise(() => receiver.reset(RATE * SECONDS))
  const rawStarted = yield* Effect.promise(() =>
    paced(RATE * SECONDS, RATE, (i) => rawPost(agent, origin, body("bench-raw", i), i)),
  )
  const rawArrivals = (yield* Effect.promise(() => receiver.stats())).arrivals
  const rawLatencies = Array.from(rawStarted, (t, i) => rawArrivals[i]! - t)

  // 4. the BullMQ peer and the floor (test/bench/Peers.ts), on a migrated database and prefix of their own and the
  // same receiver: each runs the same number of deliveries, its dispatcher started first and its deliveries
  // enqueued (rows and jobs, or rows and attempt messages, 500 at a time) until every row says delivered.
  const peers = yield* Effect.gen(function* () {
    const platform = enginePlatform()
    yield* Layer.build(platform.layer)
    const ca = [...rootCertificates, readFileSync(testCa().caFile, "utf8")]
    const common = {
      databaseUrl: platform.env.DATABASE_URL!,
      url: origin,
      secret: secretForRaw,
      ca,
      backoffUnitMs: 1000,
    }
    const events = (from: number, count: number): Array<PeerEvent> =>
      Array.from({ length: count }, (_, k) => {
        const i = from + k
        const slug = `bench-${i % ENDPOINTS}`
        return {
          event: "move_out.initiated",
          eventId: randomUUID(),
          ownerSlug: slug,
          endpointId: i % ENDPOINTS,
          payload: body(slug, i),
        }
      })
    const drain = async (
      dispatcher: {
        readonly enqueue: (e: ReadonlyArray<PeerEvent>) => Promise<void>
        readonly delivered: () => Promise<number>
      },
      size: number,
      begin: () => Promise<void>,
    ) => {
      await receiver.reset(size)
      const from = await cpuShares(receiver)
      const start = performance.now()
      await begin()
      for (let i = 0; i < size; i += 500) await dispatcher.enqueue(events(i, Math.min(500, size - i)))
      await waitFor(() => receiver.stats().then((s) => s.count >= size), 600_000)
      await waitFor(() => dispatcher.delivered().then((n) => n >= size), 120_000)
      const seconds = (performance.now() - start) / 1000
      return { rate: size / seconds, cpu: perDelivery(from, await cpuShares(receiver), size) }
    }
    const bullRun = (size: number, concurrency: number) =>
      Effect.promise(async () => {
        const peer = await bullPeer({ ...common, tables: "bench_bull", redisUrl: REDIS_URL })
        try {
          return { concurrency, ...(await drain(peer, size, () => peer.start(concurrency))) }
        } finally {
          await peer.close()
        }
      })
    const floorRun = (size: number) =>
      Effect.promise(async () => {
        const bare = await floor({
          ...common,
          tables: "bench_floor",
          natsUrl: platform.env.NATS_URL!,
          prefix: platform.env.NATS_SUBJECT_PREFIX!,
        })
        try {
          return await drain(bare, size, () => bare.start(FLOOR_IN_HAND))
        } finally {
          await bare.close()
        }
      })
    // Warm-ups, as the engine's round: code compiled, pools grown.
    yield* bullRun(WARMUP, PEER_CONCURRENCY[0] ?? 64)
    yield* floorRun(WARMUP)
    const tried: Array<Awaited<Effect.Success<ReturnType<typeof bullRun>>>> = []
    for (const concurrency of PEER_CONCURRENCY) tried.push(yield* bullRun(DELIVERIES, concurrency))
    const best = [...tried].sort((a, b) => b.rate - a.rate)[0]!
    const bare = yield* floorRun(DELIVERIES)
    // The peer's latency at the engine's rate, with its best concurrency: each event's row and job as it comes.
    const peerLatencies = yield* Effect.promise(async () => {
      const peer = await bullPeer({ ...common, tables: "bench_bull", redisUrl: REDIS_URL })
      try {
        await peer.start(best.concurrency)
        const count = RATE * SECONDS
        await receiver.reset(count)
        const started = await paced(count, RATE, (i) => peer.enqueue(events(i, 1)))
        await waitFor(() => receiver.stats().then((s) => s.arrivals.every((a) => a > 0)), 120_000)
        const arrivals = (await receiver.stats()).arrivals
        return Array.from(started, (t, i) => arrivals[i]! - t)
      } finally {
        await peer.close()
      }
    })
    return { tried, best, bare, peerLatencies }
  }).pipe(Effect.scoped)
  /** The machine's CPU per delivery that the dispatcher and its servers spent (the receiver's thread left out). */
  const dispatcherCpu = (cpu: CpuPerDelivery) =>
    cpu.engine + cpu.otherThreads + cpu.postgres + cpu.nats + cpu.redis
  const oursCpu = dispatcherCpu(result.cpu)

  return {
    rows: [
      {
        name: `webhooks vs the BullMQ peer: ${DELIVERIES} signed deliveries with records written, deliveries/s`,
        ours,
        baseline: peers.best.rate,
        unit: "deliveries/s",
        baselineName: `BullMQ on Redis, rows in Postgres, concurrency ${peers.best.concurrency}, the best of ${PEER_CONCURRENCY.join(", ")}`,
      },
      {
        name: "webhooks vs the BullMQ peer: machine CPU per delivery (the process, Postgres, nats-server or Redis)",
        ours: oursCpu,
        baseline: dispatcherCpu(peers.best.cpu),
        unit: "µs",
        baselineName: "BullMQ peer, the same run",
      },
      {
        name: `webhooks vs the bare durable floor: ${DELIVERIES} signed deliveries with records written, deliveries/s`,
        ours,
        baseline: peers.bare.rate,
        unit: "deliveries/s",
        baselineName: `bare dispatcher: rows, JetStream attempt messages, batched claim and outcome, ${FLOOR_IN_HAND} in hand`,
      },
      {
        name: `webhooks: ${DELIVERIES} events -> signed deliveries with records written (${ENDPOINTS} endpoints)`,
        ours,
        baseline: raw,
        unit: "deliveries/s",
        baselineName: `raw signed undici POSTs, ${INFLIGHT} in flight`,
      },
    ],
    latencies: [
      {
        name: `webhooks: event -> first attempt at ${RATE}/s`,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        baselineP50: percentile(rawLatencies, 50),
        baselineP99: percentile(rawLatencies, 99),
        baselineName: "raw signed POST -> arrival, same rate",
      },
      {
        name: `webhooks vs the BullMQ peer: event -> first attempt at ${RATE}/s`,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        baselineP50: percentile(peers.peerLatencies, 50),
        baselineP99: percentile(peers.peerLatencies, 99),
        baselineName: `BullMQ peer, event -> row and job -> arrival, concurrency ${peers.best.concurrency}`,
      },
    ] satisfies Array<LatencyRow>,
    notes: [
      `webhooks: ${ROUNDS} rounds, each against the raw bursts either side of it (deliveries/s, raw/s, ratio; ` +
        `share of the machine's CPU time stolen by the hypervisor in the round / the bursts): ` +
        rounds
          .map(
            (r) =>
              `${Math.round(r.rate)} / ${Math.round(r.rawRate)} (${ratioOf(r).toFixed(2)}; ` +
              `${percent(r.result.cpu.steal)} / ${percent(r.rawCpu.steal)})`,
          )
          .join("; ") +
        `; the median round is the one reported`,
      `webhooks: the router made every delivery of the backlog after ${result.routedSeconds.toFixed(2)} s ` +
        `(${Math.round(DELIVERIES / result.routedSeconds)} events/s); every request of it arrived after ${result.arrivedSeconds.toFixed(2)} s, every record ` +
        `said delivered after ${result.recordedSeconds.toFixed(2)} s (${Math.round(DELIVERIES / result.arrivedSeconds)} ` +
        `arrivals/s); ratio to raw ${(ours / raw).toFixed(2)}`,
      `webhooks: CPU time per delivery${STAGED ? " (delivery actor stage)" : ""}: the engine's thread ` +
        `${result.cpu.engine.toFixed(0)} µs, the receiver's thread ${result.cpu.receiver.toFixed(0)} µs, this ` +
        `process's other threads (V8's helpers, libuv) ${result.cpu.otherThreads.toFixed(0)} µs, Postgres ${result.cpu.postgres.toFixed(0)} µs, nats-server ` +
        `${result.cpu.nats.toFixed(0)} µs; the whole machine ${result.cpu.machine.toFixed(0)} µs; socket writes ` +
        `per delivery: ${(result.writes.postgres / DELIVERIES).toFixed(2)} to postgres, ` +
        `${(result.writes.nats / DELIVERIES).toFixed(2)} to nats, ${(result.writes.receiver / DELIVERIES).toFixed(2)} ` +
        `to the receiver; garbage collections of the engine's thread: ${result.gc.minor} minor pausing it ` +
        `${((result.gc.minorMs * 1000) / DELIVERIES).toFixed(0)} µs per delivery, ${result.gc.major} major pausing ` +
        `it ${((result.gc.majorMs * 1000) / DELIVERIES).toFixed(0)} µs per delivery`,
      ...result.statements.map((line, i) => (i === 0 ? `webhooks: ${line}` : line)),
      `webhooks: CPU time per raw signed POST: the sending thread ${rawCpu.engine.toFixed(0)} µs, the receiver's ` +
        `thread ${rawCpu.receiver.toFixed(0)} µs, the whole machine ${rawCpu.machine.toFixed(0)} µs`,
      ...(STAGED
        ? [
            `webhooks (staged): delivery actor alone ${Math.round(DELIVERIES / result.sendingSeconds)} deliveries/s ` +
              `after the router alone made them at ${Math.round(DELIVERIES / result.routedSeconds)} events/s`,
            ...(result.routerCpu === undefined
              ? []
              : [
                  `webhooks: CPU time per event (router stage): the engine's thread ` +
                    `${result.routerCpu.engine.toFixed(0)} µs, this process's other threads ` +
                    `${result.routerCpu.otherThreads.toFixed(0)} µs, Postgres ${result.routerCpu.postgres.toFixed(0)} µs, ` +
                    `nats-server ${result.routerCpu.nats.toFixed(0)} µs; the whole machine ` +
                    `${result.routerCpu.machine.toFixed(0)} µs`,
                ]),
          ]
        : []),
      `webhooks: latency stages at ${RATE}/s (p50 / p99): publish -> delivery row ` +
        `${percentile(routedAfter, 50).toFixed(1)} / ${percentile(routedAfter, 99).toFixed(1)} ms, ` +
        `row -> request started ${percentile(claimedAfter, 50).toFixed(1)} / ` +
        `${percentile(claimedAfter, 99).toFixed(1)} ms; event loop delay ` +
        `${loopDelay[0]!.toFixed(1)} / ${loopDelay[1]!.toFixed(1)} ms`,
      `webhooks: failed attempts: ${failures.length === 0 ? "none" : failures.join("; ")}`,
      `webhooks: the BullMQ peer by concurrency (deliveries/s; CPU per delivery: its process, Postgres, Redis): ` +
        peers.tried
          .map(
            (t) =>
              `${t.concurrency}: ${Math.round(t.rate)} (${(t.cpu.engine + t.cpu.otherThreads).toFixed(0)} / ` +
              `${t.cpu.postgres.toFixed(0)} / ${t.cpu.redis.toFixed(0)} µs)`,
          )
          .join("; "),
      `webhooks: CPU per delivery, ours: the process ${(result.cpu.engine + result.cpu.otherThreads).toFixed(0)} µs, ` +
        `Postgres ${result.cpu.postgres.toFixed(0)} µs, nats-server ${result.cpu.nats.toFixed(0)} µs; the floor: ` +
        `the process ${(peers.bare.cpu.engine + peers.bare.cpu.otherThreads).toFixed(0)} µs, Postgres ` +
        `${peers.bare.cpu.postgres.toFixed(0)} µs, nats-server ${peers.bare.cpu.nats.toFixed(0)} µs ` +
        `(${Math.round(dispatcherCpu(peers.bare.cpu))} µs in all)`,
    ],
  }
}).pipe(Effect.scoped)

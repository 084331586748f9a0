import { Effect, Fiber, Layer } from "effect"
import { Retention } from "../../backend/operator/Retention.ts"
import { Db } from "../../backend/platform/Db.ts"
import { webhookWorkersLayer } from "../../backend/webhooks/delivery/Workers.ts"
import { enginePlatform } from "../support/WebhookEngine.ts"
import { percentile } from "./Probes.ts"
import type { LatencyRow } from "./Roster.ts"
import { benchEndpoints, ENDPOINTS, now, paced, startReceiverThread } from "./WebhookLoad.ts"

/**
 * The delivery engine's latency (event published -> first attempt at the receiver) at `BENCH_RETENTION_RATE`
 * events a second while the retention sweep deletes `BENCH_RETENTION_EXPIRED` expired deliveries (each with one
 * attempt), against the same engine on the same database with no sweep running, measured just before for
 * `BENCH_RETENTION_SECONDS`. The measurement under the sweep lasts as long as the sweep does. Figures are printed,
 * never asserted.
 */
const EXPIRED = Number(process.env.BENCH_RETENTION_EXPIRED ?? 1_000_000)
const RATE = Number(process.env.BENCH_RETENTION_RATE ?? 1000)
const SECONDS = Number(process.env.BENCH_RETENTION_SECONDS ?? 20)
const SEED_CHUNK = 100_000
const WARMUP = 2000

export const retentionBench = Effect.gen(function* () {
  const receiver = yield* Effect.acquireRelease(Effect.promise(startReceiverThread), (r) =>
    Effect.promise(r.close),
  )
  const platform = enginePlatform({
    WEBHOOK_RATE_LIMIT_PER_MINUTE: "1000000",
    WEBHOOK_BACKOFF_UNIT_MS: "1000",
  })
  const context = yield* Layer.build(Retention.layer.pipe(Layer.provideMerge(platform.layer)))
  return yield* Effect.gen(function* () {
    const db = yield* Db
    const retention = yield* Retention
    const { endpoints, publishEvent } = yield* benchEndpoints(`https://127.0.0.1:${receiver.port}`, "bench")

    const seedStart = performance.now()
    for (let from = 0; from < EXPIRED; from += SEED_CHUNK) {
      const count = Math.min(SEED_CHUNK, EXPIRED - from)
      yield* db.query(
        (sql) => sql`
          with made as (
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status,
                                            last_attempted_at, delivered_at, duration_ms, created_at, updated_at)
            select (${endpoints}::bigint[])[1 + i % ${ENDPOINTS}], 'expired-' || i, 'move_out.initiated',
                   'bench-' || (i % ${ENDPOINTS}), convert_to(repeat('x', 100), 'UTF8'), 'delivered',
                   now() - interval '40 days', now() - interval '40 days', 25,
                   now() - interval '40 days' + make_interval(secs => i / 100.0),
                   now() - interval '40 days'
            from generate_series(${from}::int, ${from + count - 1}::int) i
            returning id
          )
          insert into webhook_attempts (delivery_id, series, attempt_number, started_at, status_code, duration_ms)
          select id, 1, 1, now() - interval '40 days', 200, 25 from made`,
      )
    }
    yield* db.query((sql) => sql`vacuum analyze webhook_deliveries, webhook_attempts`)
    const seedSeconds = (performance.now() - seedStart) / 1000

    let next = 0
    /** `count` events at RATE a second; when each was published, by the event's global index from `base`. */
    const publishWindow = (count: number) =>
      Effect.gen(function* () {
        const base = next
        next += count
        const started = yield* Effect.promise(() => paced(count, RATE, (i) => publishEvent(base + i)))
        return { base, started }
      })
    /** Each window's latencies once every event of them arrived (the receiver keeps arrivals by global index). */
    const latencies = (windows: ReadonlyArray<{ base: number; started: Float64Array }>) =>
      Effect.gen(function* () {
        const deadline = now() + 300_000
        while (now() < deadline) {
          const { arrivals } = yield* Effect.promise(() => receiver.stats())
          if (
            windows.every((w) => arrivals.subarray(w.base, w.base + w.started.length).every((a) => a > 0))
          ) {
            return windows.flatMap((w) => Array.from(w.started, (t, i) => arrivals[w.base + i]! - t))
          }
          yield* Effect.sleep("500 millis")
        }
        const statuses = yield* db.query(
          (sql) => sql`
            select status, last_attempt_failure_reason as reason, count(*)::int as n
            from webhook_deliveries group by 1, 2`,
        )
        return yield* Effect.die(
          new Error(`events never all arrived; deliveries: ${JSON.stringify(statuses)}`),
        )
      })

    // Room for an hour of events: arrivals past the array's end would not be recorded.
    yield* Effect.promise(() => receiver.reset(WARMUP + RATE * SECONDS + RATE * 3600))
    yield* Layer.build(webhookWorkersLayer)
    yield* latencies([yield* publishWindow(WARMUP)])
    const baseline = yield* latencies([yield* publishWindow(RATE * SECONDS)])

    const sweep = yield* Effect.forkScoped(
      Effect.gen(function* () {
        const from = performance.now()
        const pruned = yield* retention.sweep()
        return { pruned, seconds: (performance.now() - from) / 1000 }
      }),
    )
    // Events published while the sweep runs, in windows of a second.
    const windows: Array<{ base: number; started: Float64Array }> = []
    while (sweep.pollUnsafe() === undefined) windows.push(yield* publishWindow(RATE))
    const { pruned, seconds: sweepSeconds } = yield* Fiber.join(sweep)
    const during = yield* latencies(windows)

    const row: LatencyRow = {
      name: `retention: event -> first attempt at ${RATE}/s while a sweep deletes ${EXPIRED.toLocaleString("en-US")} expired deliveries`,
      p50: percentile(during, 50),
      p99: percentile(during, 99),
      baselineP50: percentile(baseline, 50),
      baselineP99: percentile(baseline, 99),
      baselineName: "the same engine and database, no sweep, just before",
    }
    return {
      latencies: [row],
      notes: [
        `retention: seeded ${EXPIRED.toLocaleString("en-US")} expired deliveries with an attempt each in ` +
          `${seedSeconds.toFixed(0)} s; the sweep deleted ${pruned.deliveries.toLocaleString("en-US")} in ` +
          `${sweepSeconds.toFixed(1)} s (${Math.round(pruned.deliveries / sweepSeconds)} deliveries/s, batches ` +
          `of 1,000) while ${during.length.toLocaleString("en-US")} events were delivered`,
      ],
    }
  }).pipe(Effect.provide(context))
}).pipe(Effect.scoped)

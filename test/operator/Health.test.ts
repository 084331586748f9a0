import { assert, describe, it as plain, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Health } from "../../backend/operator/Health.ts"
import {
  LATENCY_SLOTS,
  latencyQuantile,
  latencyQuantileBounds,
  latencySlot,
} from "../../backend/webhooks/delivery/HealthBuckets.ts"
import {
  attemptsOf,
  awaitDeliveries,
  engineService,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

const engine = engineService()
const testLayer = Health.layer.pipe(Layer.provideMerge(engine.layer))

const histogram = (durations: ReadonlyArray<number>) => {
  const latency = new Array<number>(LATENCY_SLOTS).fill(0)
  for (const d of durations) latency[latencySlot(d)]!++
  return latency
}

describe("latency histogram", () => {
  plain("estimates quantiles within the slot that holds them", () => {
    assert.strictEqual(latencySlot(0), 0)
    assert.strictEqual(latencySlot(1), 1)
    assert.strictEqual(latencySlot(99), 11)
    assert.strictEqual(latencySlot(100), 12)
    assert.strictEqual(latencySlot(60_000), LATENCY_SLOTS - 1)
    assert.isNull(latencyQuantile(histogram([]), 0.5))
    // Ten attempts of 100-149 ms and one slow one: the median is in 100..150, p95 in the slow one's slot.
    const latency = histogram([...Array.from({ length: 10 }, (_, i) => 100 + i * 5), 2500])
    const p50 = latencyQuantile(latency, 0.5)!
    assert.isTrue(p50 >= 100 && p50 <= 150, String(p50))
    const p95 = latencyQuantile(latency, 0.95)!
    assert.isTrue(p95 >= 2000 && p95 <= 3000, String(p95))
    assert.strictEqual(latencyQuantile(histogram([20_000]), 0.95), 10_000)
  })

  plain("names the slot a quantile lies in, the bounds an estimate is shown with", () => {
    assert.isNull(latencyQuantileBounds(histogram([]), 0.95))
    // Attempts that time out at 4,000 ms crowd at the slot's low end: the even-spread estimate overshoots the true
    // p95, which the bounds still hold.
    const durations = [
      ...Array.from({ length: 80 }, () => 120),
      ...Array.from({ length: 20 }, (_, i) => 4_000 + i * 3),
    ]
    const sorted = [...durations].sort((a, b) => a - b)
    const truth = sorted[Math.ceil(0.95 * sorted.length) - 1]!
    const latency = histogram(durations)
    const bounds = latencyQuantileBounds(latency, 0.95)!
    assert.deepStrictEqual(bounds, { low_ms: 3_000, high_ms: 5_000 })
    assert.isTrue(truth >= bounds.low_ms && truth < bounds.high_ms!, String(truth))
    const estimate = latencyQuantile(latency, 0.95)!
    assert.isTrue(estimate >= bounds.low_ms && estimate <= bounds.high_ms!, String(estimate))
    assert.deepStrictEqual(latencyQuantileBounds(latency, 0.5), { low_ms: 100, high_ms: 150 })
    assert.deepStrictEqual(latencyQuantileBounds(histogram([20_000]), 0.95), {
      low_ms: 10_000,
      high_ms: null,
    })
    assert.deepStrictEqual(latencyQuantileBounds(histogram([0]), 0.5), { low_ms: 0, high_ms: 1 })
  })
})

describe("endpoint health", () => {
  layer(testLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "counts every attempt as it is recorded, with latency from the histogram, and what is waiting",
      () =>
        Effect.gen(function* () {
          const { receiver, owner, endpointId } = yield* receiverEndpoint("acme-health", "/health", [
            "policy.created",
          ])
          // Every third request fails once, so some deliveries take two attempts.
          receiver.respond("/health", (_, index) => (index % 3 === 0 ? { status: 500 } : { status: 200 }))
          for (let i = 0; i < 6; i++) {
            yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
          }
          const rows = yield* awaitDeliveries(
            endpointId,
            (all) => all.length === 6 && all.every((row) => row.status === "delivered"),
          )
          const attempts = (yield* Effect.forEach(rows, (row) => attemptsOf(row.id))).flat()
          const health = yield* Health
          const shown = yield* health.health(endpointId, new Date())
          const failed = attempts.filter((a) => a.status_code !== 200).length
          assert.deepStrictEqual(
            [shown.hour.attempts, shown.hour.succeeded, shown.hour.failed],
            [attempts.length, 6, failed],
          )
          assert.isAbove(failed, 0)
          assert.deepStrictEqual(
            [shown.day.attempts, shown.day.succeeded, shown.day.failed],
            [attempts.length, 6, failed],
          )
          assert.strictEqual(shown.hour.success_rate, 6 / attempts.length)
          const latency = histogram(attempts.map((a) => a.duration_ms!))
          assert.strictEqual(shown.hour.p50_ms, latencyQuantile(latency, 0.5))
          assert.strictEqual(shown.day.p95_ms, latencyQuantile(latency, 0.95))
          assert.deepStrictEqual(shown.hour.p50_bounds_ms, latencyQuantileBounds(latency, 0.5))
          assert.deepStrictEqual(shown.day.p95_bounds_ms, latencyQuantileBounds(latency, 0.95))
          assert.strictEqual(shown.hour.buckets.length, 12)
          assert.strictEqual(shown.day.buckets.length, 24)
          assert.strictEqual(
            shown.hour.buckets.reduce((n, b) => n + b.attempts, 0),
            attempts.length,
          )
          assert.strictEqual(shown.waiting, 0)

          yield* query(
            (sql) => sql`update webhook_endpoints set status = 'suspended' where id = ${endpointId}`,
          )
          yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
          yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
          yield* awaitDeliveries(endpointId, (all) => all.length === 8)
          assert.strictEqual((yield* health.health(endpointId, new Date())).waiting, 2)
        }).pipe(Effect.scoped),
    )

    it.effect("places buckets in the hour's 5-minute and the day's hourly slots, and prunes old ones", () =>
      Effect.gen(function* () {
        const health = yield* Health
        const endpointId = 987654
        const now = new Date("2026-05-01T12:07:30Z")
        const bucket = (at: string, attempts: number, succeeded: number, durations: ReadonlyArray<number>) =>
          query(
            (sql) => sql`
              insert into webhook_endpoint_health (endpoint_id, bucket_start, attempts, succeeded, failed, latency)
              values (${endpointId}, ${new Date(at)}, ${attempts}, ${succeeded}, ${attempts - succeeded},
                      ${histogram(durations)}::int[])`,
          )
        yield* bucket("2026-05-01T12:05:00Z", 2, 2, [10, 12]) // the current 5 minutes
        yield* bucket("2026-05-01T11:10:00Z", 1, 0, [400]) // the hour's first bucket
        yield* bucket("2026-05-01T11:05:00Z", 3, 3, [5, 5, 5]) // before the hour, inside the day
        yield* bucket("2026-04-30T13:00:00Z", 4, 1, [1000, 1000, 1000, 1000]) // the day's first hour
        yield* bucket("2026-04-30T12:55:00Z", 9, 9, [1]) // older than the day
        const shown = yield* health.health(endpointId, now)
        assert.deepStrictEqual(
          shown.hour.buckets.map((b) => [b.start, b.attempts]).filter(([, n]) => n !== 0),
          [
            ["2026-05-01T11:10:00.000Z", 1],
            ["2026-05-01T12:05:00.000Z", 2],
          ],
        )
        assert.strictEqual(shown.hour.buckets[0]!.start, "2026-05-01T11:10:00.000Z")
        assert.deepStrictEqual([shown.hour.attempts, shown.hour.succeeded, shown.hour.failed], [3, 2, 1])
        assert.deepStrictEqual(
          shown.day.buckets.map((b) => [b.start, b.attempts]).filter(([, n]) => n !== 0),
          [
            ["2026-04-30T13:00:00.000Z", 4],
            ["2026-05-01T11:00:00.000Z", 4],
            ["2026-05-01T12:00:00.000Z", 2],
          ],
        )
        assert.deepStrictEqual([shown.day.attempts, shown.day.succeeded], [10, 6])
        assert.strictEqual(shown.day.success_rate, 0.6)
        assert.isTrue(shown.day.buckets[0]!.p50_ms! >= 1000 && shown.day.buckets[0]!.p50_ms! <= 1500)
        assert.isNull(shown.day.buckets[1]!.p50_ms)

        const left = query(
          (sql) =>
            sql`select count(*)::int as n from webhook_endpoint_health where endpoint_id = ${endpointId}`,
        ).pipe(Effect.map(([row]) => row!.n))
        // Kept for 25 hours: a bucket just out of the day's window is still there.
        yield* health.prune(now)
        assert.strictEqual(yield* left, 5)
        yield* health.prune(new Date(now.getTime() + 2 * 3_600_000))
        assert.strictEqual(yield* left, 3)
      }),
    )
  })
})

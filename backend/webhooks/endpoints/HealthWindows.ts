import { SLOW_AFTER_TIMEOUTS, slowedCap } from "../delivery/EndpointPlaces.ts"
import {
  BUCKET_MS,
  LATENCY_SLOTS,
  latencyQuantile,
  latencyQuantileBounds,
} from "../delivery/HealthBuckets.ts"
import type { HealthBucketRow } from "./DeliveryReads.ts"
import type { EndpointHealth, HealthSummary, HealthWindow } from "./HealthApi.ts"

/**
 * An endpoint's attempts over a window, summed from the health buckets the delivery engine keeps, for every
 * reader that shows them (the console's health, the console's and the portal's endpoint lists). Attempts whose
 * outcome is unknown (their process stopped mid-request) are not counted. Latency quantiles are estimates from the
 * buckets' histograms: each window's comes with the bounds of the histogram slot that holds it (`*_bounds_ms`).
 */

/** The last hour is 12 buckets of `BUCKET_MS`. */
export const HOUR_BUCKETS = 12

const sum = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) =>
  Array.from({ length: LATENCY_SLOTS }, (_, i) => (a[i] ?? 0) + (b[i] ?? 0))

/** `count` buckets of `width` ms ending with the one holding `now`, each the sum of the rows inside it. */
export const healthWindow = (
  rows: ReadonlyArray<HealthBucketRow>,
  now: number,
  width: number,
  count: number,
): HealthWindow => {
  const last = Math.floor(now / width) * width
  const first = last - (count - 1) * width
  const buckets = Array.from({ length: count }, (_, i) => ({
    start: first + i * width,
    attempts: 0,
    succeeded: 0,
    failed: 0,
    latency: [] as ReadonlyArray<number>,
  }))
  for (const row of rows) {
    const at = row.bucket_start.getTime()
    if (at < first || at > now) continue
    const bucket = buckets[Math.floor((at - first) / width)]!
    bucket.attempts += row.attempts
    bucket.succeeded += row.succeeded
    bucket.failed += row.failed
    bucket.latency = sum(bucket.latency, row.latency)
  }
  const total = buckets.reduce(
    (all, b) => ({
      attempts: all.attempts + b.attempts,
      succeeded: all.succeeded + b.succeeded,
      failed: all.failed + b.failed,
      latency: sum(all.latency, b.latency),
    }),
    { attempts: 0, succeeded: 0, failed: 0, latency: [] as ReadonlyArray<number> },
  )
  return {
    attempts: total.attempts,
    succeeded: total.succeeded,
    failed: total.failed,
    success_rate: total.attempts === 0 ? null : total.succeeded / total.attempts,
    p50_ms: latencyQuantile(total.latency, 0.5),
    p95_ms: latencyQuantile(total.latency, 0.95),
    p50_bounds_ms: latencyQuantileBounds(total.latency, 0.5),
    p95_bounds_ms: latencyQuantileBounds(total.latency, 0.95),
    buckets: buckets.map((b) => ({
      start: new Date(b.start).toISOString(),
      attempts: b.attempts,
      succeeded: b.succeeded,
      failed: b.failed,
      p50_ms: latencyQuantile(b.latency, 0.5),
      p95_ms: latencyQuantile(b.latency, 0.95),
    })),
  }
}

/** The start of the oldest bucket of the last hour at `now`: what `DeliveryReads.healthBucketsOf` reads from. */
export const lastHourSince = (now: Date) =>
  new Date(Math.floor(now.getTime() / BUCKET_MS) * BUCKET_MS - (HOUR_BUCKETS - 1) * BUCKET_MS)

/** Each endpoint's last hour, from the buckets of them all read at once (since `lastHourSince(now)`). */
export const lastHourSummaries = (
  rows: ReadonlyArray<HealthBucketRow & { readonly endpoint_id: string }>,
  endpointIds: ReadonlyArray<number>,
  now: Date,
) =>
  new Map(
    endpointIds.map((id): [number, HealthSummary] => {
      const hour = healthWindow(
        rows.filter((row) => Number(row.endpoint_id) === id),
        now.getTime(),
        BUCKET_MS,
        HOUR_BUCKETS,
      )
      const { attempts, succeeded, failed, success_rate, p95_ms, p95_bounds_ms } = hour
      return [id, { attempts, succeeded, failed, success_rate, p95_ms, p95_bounds_ms }]
    }),
  )

const HOUR_MS = 3_600_000

/** The start of the oldest bucket `endpointHealth` shows at `now`: the last day's first hour. */
export const lastDaySince = (now: Date) =>
  new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - 23 * HOUR_MS)

/**
 * An endpoint's health at `now` from its buckets since `lastDaySince(now)` and its deliveries still waiting: the
 * last hour (12 buckets of 5 minutes), the last day (24 of an hour), and whether the engine slows it (the newest
 * bucket that counted timeouts in a row says so; `maxInFlight` is the engine's cap per endpoint).
 */
export const endpointHealth = (
  rows: ReadonlyArray<HealthBucketRow>,
  waiting: number,
  now: Date,
  maxInFlight: number,
): EndpointHealth => {
  const streak = rows.findLast((row) => row.timeouts_in_row != null)?.timeouts_in_row ?? 0
  return {
    waiting,
    slowed:
      streak >= SLOW_AFTER_TIMEOUTS
        ? { timeouts_in_row: streak, max_in_flight: slowedCap(maxInFlight) }
        : null,
    hour: healthWindow(rows, now.getTime(), BUCKET_MS, HOUR_BUCKETS),
    day: healthWindow(rows, now.getTime(), HOUR_MS, 24),
  }
}

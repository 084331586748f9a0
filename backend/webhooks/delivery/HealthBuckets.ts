/**
 * The per-endpoint health aggregates written with attempt outcomes: 5-minute buckets of attempts, successes,
 * failures and a latency histogram of fixed slots (1-2-3-5-7 per decade). A quantile read from them is known only
 * to its slot: readers show it as an estimate with the slot's bounds (`latencyQuantileBounds`).
 */

export const BUCKET_MS = 5 * 60_000

/** Upper bounds (exclusive) of the latency slots in ms; the last slot holds everything from the last bound up. */
export const LATENCY_BOUNDS_MS = [
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 5000, 7000,
  10000,
] as const
export const LATENCY_SLOTS = LATENCY_BOUNDS_MS.length + 1

export const latencySlot = (ms: number) => {
  let slot = 0
  while (slot < LATENCY_BOUNDS_MS.length && ms >= LATENCY_BOUNDS_MS[slot]!) slot++
  return slot
}

export interface HealthBucket {
  readonly endpointId: number
  readonly bucketStart: number
  attempts: number
  succeeded: number
  failed: number
  readonly latency: Array<number>
  /** The endpoint's timeouts in a row after the batch's last outcome in the bucket that counted them. */
  timeoutsInRow: number | null
}

/** The outcomes of a batch summed per endpoint and bucket, in (endpoint, bucket) order (the lock order). */
export const healthBuckets = (
  outcomes: ReadonlyArray<{
    readonly endpointId: number
    readonly startedAt: Date
    readonly durationMs: number
    readonly statusCode: number | null
    readonly timeoutsInRow?: number | null
  }>,
): ReadonlyArray<HealthBucket> => {
  const buckets = new Map<string, HealthBucket>()
  for (const o of outcomes) {
    const bucketStart = Math.floor(o.startedAt.getTime() / BUCKET_MS) * BUCKET_MS
    const key = `${o.endpointId}/${bucketStart}`
    let bucket = buckets.get(key)
    if (bucket === undefined) {
      bucket = {
        endpointId: o.endpointId,
        bucketStart,
        attempts: 0,
        succeeded: 0,
        failed: 0,
        latency: new Array<number>(LATENCY_SLOTS).fill(0),
        timeoutsInRow: null,
      }
      buckets.set(key, bucket)
    }
    bucket.attempts++
    if (o.statusCode !== null && o.statusCode >= 200 && o.statusCode < 300) bucket.succeeded++
    else bucket.failed++
    bucket.latency[latencySlot(o.durationMs)]!++
    if (o.timeoutsInRow !== undefined && o.timeoutsInRow !== null) bucket.timeoutsInRow = o.timeoutsInRow
  }
  return [...buckets.values()].sort((a, b) => a.endpointId - b.endpointId || a.bucketStart - b.bucketStart)
}

/** The bounds in ms of a histogram slot: `high_ms` is exclusive, null for the last, open slot. */
export interface SlotBounds {
  readonly low_ms: number
  readonly high_ms: number | null
}

/** The slot of the attempt at `rank` (1-based, in duration order) and the attempts in slots before it. */
const slotAt = (latency: ReadonlyArray<number>, rank: number) => {
  let below = 0
  for (let slot = 0; slot < latency.length; slot++) {
    const n = latency[slot] ?? 0
    if (n > 0 && below + n >= rank) return { slot, below, n }
    below += n
  }
  return undefined
}

const boundsOf = (slot: number): SlotBounds => ({
  low_ms: slot === 0 ? 0 : LATENCY_BOUNDS_MS[slot - 1]!,
  high_ms: LATENCY_BOUNDS_MS[slot] ?? null,
})

/**
 * The slot that holds the `quantile` (0..1) of the histogram's attempts: the true quantile lies within these
 * bounds, which is all the histogram knows of it. The nearest-rank attempt (the ceiling of `quantile` times the
 * count) decides the slot. Null without attempts.
 */
export const latencyQuantileBounds = (
  latency: ReadonlyArray<number>,
  quantile: number,
): SlotBounds | null => {
  const total = latency.reduce((sum, n) => sum + n, 0)
  if (total === 0) return null
  const found = slotAt(latency, Math.max(1, Math.ceil(quantile * total)))
  return found === undefined ? null : boundsOf(found.slot)
}

/**
 * An estimate of the duration below which `quantile` (0..1) of the histogram's attempts fall, interpolated within
 * the slot `latencyQuantileBounds` names (the last, open slot answers its lower bound); null without attempts. The
 * slot's attempts are taken as spread evenly over it, which they rarely are (timeouts crowd at one duration), so
 * the estimate can be anywhere in the slot: shown with those bounds, never alone as a measurement.
 */
export const latencyQuantile = (latency: ReadonlyArray<number>, quantile: number): number | null => {
  const total = latency.reduce((sum, n) => sum + n, 0)
  if (total === 0) return null
  const rank = quantile * total
  const found = slotAt(latency, Math.max(1, Math.ceil(rank)))
  if (found === undefined) return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!
  const { low_ms, high_ms } = boundsOf(found.slot)
  if (high_ms === null) return low_ms
  return Math.round(low_ms + ((high_ms - low_ms) * Math.max(0, rank - found.below)) / found.n)
}

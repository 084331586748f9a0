/**
 * The retry policy, in backoff units (`WEBHOOK_BACKOFF_UNIT_MS`, one second in production): attempt k waits
 * min(2^k, 3600) units after attempt k-1 failed; the rate limit counts attempts over any 60 units, and a
 * rate-limited attempt waits 60 units without being used up;
 * `Retry-After` on 429/503 postpones the next attempt to at least that time, honoured up to one hour.
 */

export const BACKOFF_CAP_UNITS = 3600
export const RATE_LIMIT_DELAY_UNITS = 60
export const RETRY_AFTER_CAP_MS = 3_600_000

/** Units to wait before attempt `attempt` (2, 3, ...). */
export const backoffUnits = (attempt: number) => Math.min(2 ** attempt, BACKOFF_CAP_UNITS)

/**
 * Milliseconds a `Retry-After` value asks for at `nowMs`: delay-seconds or an HTTP date; undefined when absent
 * or unreadable. Capped at one hour, so a receiver cannot park a delivery indefinitely.
 */
export const retryAfterMs = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  let ms: number
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000
  else {
    const at = Date.parse(trimmed)
    if (Number.isNaN(at)) return undefined
    ms = at - nowMs
  }
  return Math.min(Math.max(ms, 0), RETRY_AFTER_CAP_MS)
}

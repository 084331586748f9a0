import { type TimelineStep, TimelineSteps } from "./Api.ts"

/**
 * An event's way to one endpoint, from the records kept. `accepted`: when the work behind the event was accepted
 * (the partner's request; an event sent to the ingestion gateway, when the gateway received it); `committed`: when
 * the event was written to the outbox, just before its transaction committed; `published`: when JetStream stored
 * it; `routed`: the delivery's creation; `attempted`: its first attempt; then its end: `failed` (at its last attempt)
 * when it failed for good, else `delivered` (its success). A step with no record (a delivery routed before the first
 * three were kept, one not yet attempted or delivered) carries no time.
 */
export const deliveryTimeline = (times: {
  readonly accepted: Date | null
  readonly committed: Date | null
  readonly published: Date | null
  readonly routed: Date
  readonly firstAttempt: Date | undefined
  readonly delivered: Date | null
  /** Its last attempt: when it failed, should its `status` be `failed`. */
  readonly lastAttempt: Date | undefined
  readonly status: string
}): ReadonlyArray<TimelineStep> => {
  const failed = times.status === "failed"
  const at: Record<TimelineStep["step"], Date | null | undefined> = {
    accepted: times.accepted,
    committed: times.committed,
    published: times.published,
    routed: times.routed,
    attempted: times.firstAttempt,
    delivered: times.delivered,
    failed: failed ? times.lastAttempt : null,
  }
  let previous: Date | undefined
  const otherEnd = failed ? "delivered" : "failed"
  return TimelineSteps.filter((step) => step !== otherEnd).map((step) => {
    const when = at[step]
    if (when === undefined || when === null) return { step, at: null, after_ms: null }
    const after = previous === undefined ? null : when.getTime() - previous.getTime()
    previous = when
    return { step, at: when.toISOString(), after_ms: after }
  })
}

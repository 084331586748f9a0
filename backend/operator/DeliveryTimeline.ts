import { type TimelineStep, TimelineSteps } from "./Api.ts"

/**
 * An event's way to one endpoint, from the records kept: `routed` is the delivery's creation, `attempted` its
 * first attempt, `delivered` its success. The event's acceptance, commit and publication are in no record that
 * outlives the outbox's hour, so those steps carry no time.
 */
export const deliveryTimeline = (times: {
  readonly routed: Date
  readonly firstAttempt: Date | undefined
  readonly delivered: Date | null
}): ReadonlyArray<TimelineStep> => {
  const at: Partial<Record<TimelineStep["step"], Date>> = {
    routed: times.routed,
    ...(times.firstAttempt === undefined ? {} : { attempted: times.firstAttempt }),
    ...(times.delivered === null ? {} : { delivered: times.delivered }),
  }
  let previous: Date | undefined
  return TimelineSteps.map((step) => {
    const when = at[step]
    if (when === undefined) return { step, at: null, after_ms: null }
    const after = previous === undefined ? null : when.getTime() - previous.getTime()
    previous = when
    return { step, at: when.toISOString(), after_ms: after }
  })
}

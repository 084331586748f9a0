import { Schema } from "effect"

/*
 * An endpoint's health as its readers show it (the console's endpoint page and list, the portal's), as schemas.
 * Schema-only, importing nothing but `effect`: the console's and the portal's apps decode with them, and
 * `HealthWindows.ts` builds values of these types.
 */

const Timestamp = Schema.String.annotate({ description: "An ISO 8601 time." })

export const HealthBucket = Schema.Struct({
  start: Timestamp,
  attempts: Schema.Number,
  succeeded: Schema.Number,
  failed: Schema.Number,
  p50_ms: Schema.NullOr(Schema.Number),
  p95_ms: Schema.NullOr(Schema.Number),
})
export type HealthBucket = typeof HealthBucket.Type

/**
 * Where a latency quantile lies: the bounds of the histogram slot that holds it (`high_ms` exclusive, null for the
 * open slot past 10 s). `p50_ms` and `p95_ms` are estimates within these, interpolated as if the slot's attempts
 * were spread evenly.
 */
export const QuantileBounds = Schema.Struct({ low_ms: Schema.Number, high_ms: Schema.NullOr(Schema.Number) })
export type QuantileBounds = typeof QuantileBounds.Type

export const HealthWindow = Schema.Struct({
  attempts: Schema.Number,
  succeeded: Schema.Number,
  failed: Schema.Number,
  /** 0..1; null without attempts. */
  success_rate: Schema.NullOr(Schema.Number),
  p50_ms: Schema.NullOr(Schema.Number),
  p95_ms: Schema.NullOr(Schema.Number),
  p50_bounds_ms: Schema.NullOr(QuantileBounds),
  p95_bounds_ms: Schema.NullOr(QuantileBounds),
  buckets: Schema.Array(HealthBucket),
})
export type HealthWindow = typeof HealthWindow.Type

/** An endpoint's health: deliveries waiting, and the last hour's and day's attempts. */
export const EndpointHealth = Schema.Struct({
  /** Deliveries not yet delivered or failed (held ones included). */
  waiting: Schema.Number,
  /**
   * Set while the delivery engine slows the endpoint: its latest attempts timed out in a row (as the last process
   * to record one counted them), so it gets at most `max_in_flight` attempts at once until it answers.
   */
  slowed: Schema.NullOr(Schema.Struct({ timeouts_in_row: Schema.Number, max_in_flight: Schema.Number })),
  hour: HealthWindow,
  day: HealthWindow,
})
export type EndpointHealth = typeof EndpointHealth.Type

/** The last hour of an endpoint at a glance, as a list row shows it. */
export const HealthSummary = Schema.Struct({
  attempts: Schema.Number,
  succeeded: Schema.Number,
  failed: Schema.Number,
  /** 0..1; null without attempts. */
  success_rate: Schema.NullOr(Schema.Number),
  /** An estimate within `p95_bounds_ms`. */
  p95_ms: Schema.NullOr(Schema.Number),
  p95_bounds_ms: Schema.NullOr(QuantileBounds),
})
export type HealthSummary = typeof HealthSummary.Type

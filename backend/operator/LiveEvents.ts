import { Schema } from "effect"

/*
 * The events of `GET /api/live` (Server-Sent Events), as schemas: the backend encodes each event's data with them
 * and the console decodes it with the same declarations. Schema-only, importing nothing but `effect`. An event
 * says what changed; the page keeps its rows from the API and refetches whatever an event does not carry.
 */

/** `delivery`: a delivery was created (`pending`) or changed status (a `webhooks.status.*` message). */
export const LiveDelivery = Schema.Struct({
  delivery_id: Schema.Number,
  endpoint_id: Schema.Number,
  event: Schema.String,
  status: Schema.String,
  attempt_number: Schema.Number,
  status_code: Schema.optional(Schema.Number),
  failure_reason: Schema.optional(Schema.String),
  next_retry_at: Schema.optional(Schema.String),
  at: Schema.String,
})
export type LiveDelivery = typeof LiveDelivery.Type

/** `endpoint`: an endpoint was created or changed (status, destination, events, deletion). */
export const LiveEndpoint = Schema.Struct({ id: Schema.String })
export type LiveEndpoint = typeof LiveEndpoint.Type

/** `bulk_retry`: a bulk retry was previewed, started, moved on, or finished. */
export const LiveBulkRetry = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["previewed", "running", "completed", "cancelled"]),
  total: Schema.Number,
  done: Schema.Number,
})
export type LiveBulkRetry = typeof LiveBulkRetry.Type

/**
 * The event names. `ready` comes first on every connection, once the stream is subscribed: a page that refetches
 * its rows after it misses nothing. `session_ended` comes last when the session expired or was revoked.
 */
export const LiveEventNames = ["ready", "delivery", "endpoint", "bulk_retry", "session_ended"] as const
export type LiveEventName = (typeof LiveEventNames)[number]

import { Schema } from "effect"

/*
 * What the live views (the console's `GET /api/live`, the portal's `GET /portal/api/live`) hear of deliveries,
 * endpoints and bulk retries, as schemas. Schema-only, importing nothing but `effect`: the console's and the
 * portal's event schemas are these, so the apps decode what the backend encodes with one declaration.
 */

/** A delivery was created (`pending`) or changed status (a `webhooks.status.*` message). */
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

/** An endpoint was created or changed (status, destination, events, deletion). */
export const LiveEndpoint = Schema.Struct({ id: Schema.String })
export type LiveEndpoint = typeof LiveEndpoint.Type

/** A bulk retry was previewed, started, moved on, or finished. */
export const LiveBulkRetry = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["previewed", "running", "completed", "canceled"]),
  total: Schema.Number,
  done: Schema.Number,
})
export type LiveBulkRetry = typeof LiveBulkRetry.Type

import { Schema } from "effect"
import { EndpointStatuses, ShownDeliveryStatuses } from "../webhooks/Statuses.ts"

/*
 * The portal's read API (served under /portal/api on the portal's port), as schemas. Schema-only, importing
 * nothing but `effect` and import-free status lists: the portal's app will import these for its types and decode
 * every answer with them, so the two sides share one declaration.
 */

const Timestamp = Schema.String.annotate({ description: "An ISO 8601 time with its offset." })
const NullableTimestamp = Schema.NullOr(Timestamp)

/** Bytes of an attempt's response body the portal shows. */
export const RESPONSE_EXCERPT_BYTES = 2048

/** Any answer without a live session (401): the session ended, expired, or never was. */
export const NoSession = Schema.Struct({ error: Schema.String })

/** Errors besides 401, in the contract's shape; a 422 names each wrong field in `errors`. */
export const PortalError = Schema.Struct({
  status_code: Schema.Int,
  error: Schema.String,
  errors: Schema.optionalKey(Schema.Record(Schema.String, Schema.Array(Schema.String))),
})
export type PortalError = typeof PortalError.Type

// Endpoints.

export const EndpointStatus = Schema.Literals(EndpointStatuses)

/** The last hour of an endpoint at a glance. */
export const HealthSummary = Schema.Struct({
  attempts: Schema.Number,
  succeeded: Schema.Number,
  failed: Schema.Number,
  /** 0..1; null without attempts. */
  success_rate: Schema.NullOr(Schema.Number),
  p95_ms: Schema.NullOr(Schema.Number),
})
export type HealthSummary = typeof HealthSummary.Type

export const PortalEndpoint = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  destination_url: Schema.String,
  events: Schema.Array(Schema.String),
  status: EndpointStatus,
  last_hour: HealthSummary,
})
export type PortalEndpoint = typeof PortalEndpoint.Type

/** `GET /portal/api/endpoints`: the holder's endpoints, not deleted. */
export const EndpointsAnswer = Schema.Struct({ endpoints: Schema.Array(PortalEndpoint) })
export type EndpointsAnswer = typeof EndpointsAnswer.Type

// Deliveries.

export const DeliveryStatus = Schema.Literals(ShownDeliveryStatuses)

const deliveryFields = {
  id: Schema.Number,
  event_type: Schema.String,
  status: DeliveryStatus,
  /** The owner the event is about: a provider's endpoints receive several owners' events. */
  owner_slug: Schema.String,
  endpoint: Schema.Struct({ id: Schema.Number, name: Schema.String, destination_url: Schema.String }),
  attempt_number: Schema.Number,
  /** Attempts made so far, over every series. */
  attempt_count: Schema.Number,
  created_at: Timestamp,
  last_attempted_at: NullableTimestamp,
  next_retry_at: NullableTimestamp,
  delivered_at: NullableTimestamp,
  last_status_code: Schema.NullOr(Schema.Number),
  last_failure_reason: Schema.NullOr(Schema.String),
}

export const PortalDelivery = Schema.Struct(deliveryFields)
export type PortalDelivery = typeof PortalDelivery.Type

/** `GET /portal/api/deliveries`: newest first; `next_cursor` is null on the last page. */
export const DeliveryPage = Schema.Struct({
  deliveries: Schema.Array(PortalDelivery),
  next_cursor: Schema.NullOr(Schema.String),
})
export type DeliveryPage = typeof DeliveryPage.Type

export const PortalAttempt = Schema.Struct({
  series: Schema.Number,
  attempt_number: Schema.Number,
  started_at: Timestamp,
  duration_ms: Schema.NullOr(Schema.Number),
  status_code: Schema.NullOr(Schema.Number),
  /** The first `RESPONSE_EXCERPT_BYTES` bytes of the response body, as text; null without a response. */
  response_excerpt: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
})
export type PortalAttempt = typeof PortalAttempt.Type

export const PortalDeliveryDetail = Schema.Struct({
  ...deliveryFields,
  /** The exact bytes sent, as UTF-8 text. */
  payload_raw: Schema.String,
  /** The same, parsed. */
  payload: Schema.Unknown,
  attempts: Schema.Array(PortalAttempt),
})
export type PortalDeliveryDetail = typeof PortalDeliveryDetail.Type

/** `GET /portal/api/deliveries/{id}`. */
export const DeliveryDetailAnswer = Schema.Struct({ delivery: PortalDeliveryDetail })
export type DeliveryDetailAnswer = typeof DeliveryDetailAnswer.Type

// Events.

export const CatalogEvent = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  /** Completes "emitted when ...". */
  emitted_when: Schema.String,
  /** A body the event may be delivered with. */
  example: Schema.Unknown,
})
export type CatalogEvent = typeof CatalogEvent.Type

/** `GET /portal/api/events`: every event an endpoint may subscribe to. */
export const EventsAnswer = Schema.Struct({ events: Schema.Array(CatalogEvent) })
export type EventsAnswer = typeof EventsAnswer.Type

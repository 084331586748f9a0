import { Schema } from "effect"
import { EndpointHealth, HealthSummary } from "../webhooks/endpoints/HealthApi.ts"
import { LiveDelivery } from "../webhooks/LiveStatus.ts"
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

export { EndpointHealth, HealthSummary }

export const PortalEndpoint = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  destination_url: Schema.String,
  events: Schema.Array(Schema.String),
  status: EndpointStatus,
  last_hour: HealthSummary,
})
export type PortalEndpoint = typeof PortalEndpoint.Type

/** `GET /portal/api/endpoints/{id}/health`: the endpoint's last hour and day, as the console shows them. */
export const EndpointHealthAnswer = Schema.Struct({ health: EndpointHealth })
export type EndpointHealthAnswer = typeof EndpointHealthAnswer.Type

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

// The session.

/** The owner's look in the portal's header; a provider's session has none. */
export const PortalBrand = Schema.Struct({
  /** The owner's brand name, or its name when it set none. */
  name: Schema.String,
  /** An https image URL, or null. */
  logo_url: Schema.NullOr(Schema.String),
  /** `#rrggbb` with at least 4.5:1 contrast against white text, or null for the portal's own colour. */
  accent_color: Schema.NullOr(Schema.String),
})
export type PortalBrand = typeof PortalBrand.Type

/** The headers every delivery carries, by name, for the "verify signatures" snippets. */
export const SigningHeaders = Schema.Struct({
  signature: Schema.String,
  timestamp: Schema.String,
  event: Schema.String,
  delivery: Schema.String,
})
export type SigningHeaders = typeof SigningHeaders.Type

/** `GET /portal/api/session`: whose webhooks, what the session may do, and how the page frames itself. */
export const SessionAnswer = Schema.Struct({
  owner: Schema.optionalKey(Schema.Struct({ slug: Schema.String, name: Schema.String })),
  provider: Schema.optionalKey(Schema.Struct({ name: Schema.String })),
  read_only: Schema.Boolean,
  expires_at: Timestamp,
  /** The origin framing the portal, which `portal.resize` messages go to; null when it opens on its own. */
  parent_origin: Schema.NullOr(Schema.String),
  /** Sent back in `x-portal-csrf` on every change; a change without it is refused (403). */
  csrf_token: Schema.String,
  brand: Schema.NullOr(PortalBrand),
  signing_headers: SigningHeaders,
})
export type SessionAnswer = typeof SessionAnswer.Type

/** The header a change carries its session's `csrf_token` in. */
export const CSRF_HEADER = "x-portal-csrf"

// Changes. Every one answers 403 on a read-only session or without the CSRF header, 401 without a session,
// 422 (PortalError with `errors`) on a bad body, 404 on anything not the holder's.

/** `POST /portal/api/endpoints` (201) and `PUT /portal/api/endpoints/{id}` (200, any subset). */
export const EndpointBody = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  destination_url: Schema.optionalKey(Schema.String),
  events: Schema.optionalKey(Schema.Array(Schema.String)),
})
export type EndpointBody = typeof EndpointBody.Type

/**
 * The answer of create, edit, `POST /portal/api/endpoints/{id}/pause` and `.../resume` (no body): the endpoint
 * as the list shows it. `DELETE /portal/api/endpoints/{id}` answers 204.
 */
export const EndpointAnswer = Schema.Struct({ endpoint: PortalEndpoint })
export type EndpointAnswer = typeof EndpointAnswer.Type

/**
 * `GET /portal/api/endpoints/{id}/headers`: the names of the custom headers the endpoint is sent with (values
 * never shown). `PUT` of the same path with `{"custom_headers": {name: value | null}}` sets them (null keeps a
 * value); an endpoint without custom headers answers 422 to the PUT (the operator sets the first ones).
 */
export const CustomHeadersAnswer = Schema.Struct({ names: Schema.Array(Schema.String) })
export type CustomHeadersAnswer = typeof CustomHeadersAnswer.Type

/**
 * `POST /portal/api/endpoints/{id}/test` with `{"event": name}` (a catalog event's): 202, the delivery made with
 * the example `GET /portal/api/events` shows; its event id is `test:<uuid>`.
 */
export const TestBody = Schema.Struct({ event: Schema.String })
export const TestAnswer = Schema.Struct({ delivery: PortalDelivery })
export type TestAnswer = typeof TestAnswer.Type

/**
 * `POST /portal/api/deliveries/{id}/retry` (no body): 202, the delivery as it now is (`retrying` until its new
 * series' first attempt); 422 when its endpoint was deleted.
 */
export const RetryAnswer = Schema.Struct({ delivery: PortalDelivery })
export type RetryAnswer = typeof RetryAnswer.Type

/** `GET /portal/api/secret`: the current secret's age and any overlap; never the secret. */
export const SecretAnswer = Schema.Struct({
  created_at: NullableTimestamp,
  /** While a rotation's overlap lasts, the previous secret still signs until then. */
  previous_expires_at: NullableTimestamp,
  max_overlap_hours: Schema.Number,
})
export type SecretAnswer = typeof SecretAnswer.Type

/** `POST /portal/api/secret/rotate` with `{"overlap_hours": n}`: 201, the new secret shown this once. */
export const RotateBody = Schema.Struct({ overlap_hours: Schema.Number })
export const RotateAnswer = Schema.Struct({
  secret: Schema.String,
  created_at: Timestamp,
  previous_expires_at: NullableTimestamp,
})
export type RotateAnswer = typeof RotateAnswer.Type

// Recover: every failed delivery of one endpoint since a time, sent again at the bulk retry's capped rate.

export const RecoveryStatus = Schema.Literals(["previewed", "running", "completed", "canceled"])

export const Recovery = Schema.Struct({
  id: Schema.Number,
  endpoint_id: Schema.Number,
  since: Timestamp,
  status: RecoveryStatus,
  /** Deliveries it sends again: fixed by the preview, so what runs is what the preview counted. */
  total: Schema.Number,
  done: Schema.Number,
  created_at: Timestamp,
  finished_at: NullableTimestamp,
})
export type Recovery = typeof Recovery.Type

/**
 * `POST /portal/api/endpoints/{id}/recoveries` with `{"since": iso}`: 201, a preview (status `previewed`).
 * `POST /portal/api/recoveries/{id}/start`: 200, running. `GET /portal/api/recoveries/{id}`: its progress.
 */
export const RecoverBody = Schema.Struct({ since: Schema.String })
export const RecoveryAnswer = Schema.Struct({ recovery: Recovery })
export type RecoveryAnswer = typeof RecoveryAnswer.Type

/*
 * `GET /portal/api/live`: Server-Sent Events of the holder's own deliveries, endpoints and recoveries, shaped as
 * the console's: `ready` first, then `delivery` (the console's LiveDelivery), `endpoint` ({id}), `recovery`
 * (Recovery), and `session_ended` last when the session ends or expires.
 */
export const PortalLiveEventNames = ["ready", "delivery", "endpoint", "recovery", "session_ended"] as const

/** `delivery` on `GET /portal/api/live`: one of the holder's deliveries changed status, in the console's shape. */
export const PortalLiveDelivery = LiveDelivery
export type PortalLiveDelivery = LiveDelivery

/** `endpoint` on `GET /portal/api/live`: one of the holder's endpoints was created or changed. */
export const PortalLiveEndpoint = Schema.Struct({ id: Schema.Union([Schema.Number, Schema.String]) })
export type PortalLiveEndpoint = typeof PortalLiveEndpoint.Type

import { Schema } from "effect"
import { AuditChannels } from "../audit/Channels.ts"
import { IN_FORCE, PolicyProducts, PolicyStatuses } from "../policies/Statuses.ts"
import { EndpointStatuses, ReplayStatuses, ShownDeliveryStatuses } from "../webhooks/Statuses.ts"
import {
  EndpointHealth,
  HealthBucket,
  HealthSummary,
  HealthWindow,
  QuantileBounds,
} from "../webhooks/endpoints/HealthApi.ts"

/*
 * The operator API's requests and answers (served under /api on the console port; `docs/operator-api.md`), as
 * schemas. Schema-only, importing nothing but `effect`: the console imports these for its types and decodes
 * every answer with them, so the two sides share one declaration.
 */

export const Timestamp = Schema.String.annotate({ description: "An ISO 8601 time." })
export const NullableTimestamp = Schema.NullOr(Timestamp)

export const OperatorRoles = ["viewer", "operator", "admin"] as const
export const OperatorRole = Schema.Literals(OperatorRoles)
export type OperatorRole = typeof OperatorRole.Type

// Session.

export const SessionOperator = Schema.Struct({ email: Schema.String, role: OperatorRole })
export type SessionOperator = typeof SessionOperator.Type

/** `GET` and `POST /api/session`. */
export const SessionBody = Schema.Struct({ operator: SessionOperator, csrf_token: Schema.String })
export type SessionBody = typeof SessionBody.Type

export const SignInRequest = Schema.Struct({ email: Schema.String, password: Schema.String })
export type SignInRequest = typeof SignInRequest.Type

// Reference data.

export const OwnerRef = Schema.Struct({ slug: Schema.String, name: Schema.String })
export type OwnerRef = typeof OwnerRef.Type

export const ProviderRef = Schema.Struct({ name: Schema.String })
export type ProviderRef = typeof ProviderRef.Type

export const OwnersAnswer = Schema.Struct({ owners: Schema.Array(OwnerRef) })
export const ProvidersAnswer = Schema.Struct({ providers: Schema.Array(ProviderRef) })
export const EventTypesAnswer = Schema.Struct({ event_types: Schema.Array(Schema.String) })

const NextCursor = Schema.NullOr(Schema.String)

// Deliveries.

/** The statuses the console shows a delivery in (`held`: waiting for its suspended endpoint). */
export const DeliveryStatuses = ShownDeliveryStatuses
export const DeliveryStatus = Schema.Literals(DeliveryStatuses)
export type DeliveryStatus = typeof DeliveryStatus.Type

const deliveryFields = {
  id: Schema.Number,
  event_type: Schema.String,
  status: DeliveryStatus,
  /** The owner the event is about (its `property_owner_slug`). */
  owner: Schema.NullOr(OwnerRef),
  /** The provider whose endpoint received it; null for an owner's own endpoint. */
  provider: Schema.NullOr(ProviderRef),
  endpoint: Schema.Struct({ id: Schema.Number, name: Schema.String, destination_url: Schema.String }),
  attempt_number: Schema.Number,
  /** Attempts made so far, over every series (a retrying delivery's `attempt_number` is its next one). */
  attempt_count: Schema.Number,
  created_at: Timestamp,
  last_attempted_at: NullableTimestamp,
  next_retry_at: NullableTimestamp,
  delivered_at: NullableTimestamp,
  last_status_code: Schema.NullOr(Schema.Number),
  last_failure_reason: Schema.NullOr(Schema.String),
}

/** A delivery as the console lists it. */
export const Delivery = Schema.Struct(deliveryFields)
export type Delivery = typeof Delivery.Type

export const Attempt = Schema.Struct({
  series: Schema.Number,
  attempt_number: Schema.Number,
  started_at: Timestamp,
  status_code: Schema.NullOr(Schema.Number),
  duration_ms: Schema.NullOr(Schema.Number),
  failure_reason: Schema.NullOr(Schema.String),
  response_excerpt: Schema.NullOr(Schema.String),
})
export type Attempt = typeof Attempt.Type

/**
 * The steps of an event's way to its endpoint, in order. A timeline ends in one of the last two: `failed` for a
 * delivery that failed for good, else `delivered` (with no time while it has not been).
 */
export const TimelineSteps = [
  "accepted",
  "committed",
  "published",
  "routed",
  "attempted",
  "delivered",
  "failed",
] as const

/** One step of the timeline: when it happened (null when no record keeps it), and how long after the step before. */
export const TimelineStep = Schema.Struct({
  step: Schema.Literals(TimelineSteps),
  at: NullableTimestamp,
  /** Milliseconds since the previous step that has a time; null for the first one or an unrecorded step. */
  after_ms: Schema.NullOr(Schema.Number),
})
export type TimelineStep = typeof TimelineStep.Type

/** One delivery with its exact body, the headers it is sent with, every attempt and its event's timeline. */
export const DeliveryDetail = Schema.Struct({
  ...deliveryFields,
  /** The exact bytes sent, as UTF-8 text. */
  payload_raw: Schema.String,
  payload: Schema.Unknown,
  /** The custom headers' values are null: masked for every role (an admin reveals one on the endpoint). */
  request_headers: Schema.Record(Schema.String, Schema.NullOr(Schema.String)),
  attempts: Schema.Array(Attempt),
  timeline: Schema.Array(TimelineStep),
})
export type DeliveryDetail = typeof DeliveryDetail.Type

export const DeliveryPage = Schema.Struct({ deliveries: Schema.Array(Delivery), next_cursor: NextCursor })
export type DeliveryPage = typeof DeliveryPage.Type
export const DeliveryCount = Schema.Struct({ count: Schema.Number })
export const DeliveryAnswer = Schema.Struct({ delivery: Delivery })
export const DeliveryDetailAnswer = Schema.Struct({ delivery: DeliveryDetail })

// Bulk retries.

export const BulkRetry = Schema.Struct({
  id: Schema.Number,
  /** Its number as the console shows it ("Bulk retry #3"), given when it starts; null for a preview. */
  number: Schema.NullOr(Schema.Number),
  filter: Schema.Record(Schema.String, Schema.Unknown),
  /** `previewed`: the snapshot is taken (`total` is what a start retries), not started yet. */
  status: Schema.Literals(["previewed", "running", "completed", "canceled"]),
  total: Schema.Number,
  done: Schema.Number,
  created_by: Schema.String,
  created_at: Timestamp,
  finished_at: NullableTimestamp,
})
export type BulkRetry = typeof BulkRetry.Type

export const BulkRetryRequest = Schema.Struct({
  filter: Schema.Record(Schema.String, Schema.String),
  rate_per_second: Schema.Number,
})
export type BulkRetryRequest = typeof BulkRetryRequest.Type
export const BulkRetryPreviewRequest = Schema.Struct({ filter: Schema.Record(Schema.String, Schema.String) })
export const BulkRetryStartRequest = Schema.Struct({ rate_per_second: Schema.Number })
export const BulkRetryAnswer = Schema.Struct({ bulk_retry: BulkRetry })
export const BulkRetriesAnswer = Schema.Struct({
  bulk_retries: Schema.Array(BulkRetry),
  next_cursor: NextCursor,
})

// Endpoints.

export { EndpointStatuses }
export const EndpointStatus = Schema.Literals(EndpointStatuses)
export type EndpointStatus = typeof EndpointStatus.Type

export const Endpoint = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  owner: Schema.NullOr(OwnerRef),
  provider: Schema.NullOr(ProviderRef),
  destination_url: Schema.String,
  events: Schema.Array(Schema.String),
  status: EndpointStatus,
  suspension_reason: Schema.NullOr(Schema.String),
  /** Names only: every value is null (masked); an admin reveals one with `CustomHeaderValueAnswer`'s route. */
  custom_headers: Schema.Record(Schema.String, Schema.Null),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type Endpoint = typeof Endpoint.Type

export { EndpointHealth, HealthBucket, HealthSummary, HealthWindow, QuantileBounds }

/** An endpoint as the console lists it: with its last hour's success rate and p95. */
export const ListedEndpoint = Schema.Struct({ ...Endpoint.fields, last_hour: HealthSummary })
export type ListedEndpoint = typeof ListedEndpoint.Type

export const EndpointPage = Schema.Struct({
  endpoints: Schema.Array(ListedEndpoint),
  next_cursor: NextCursor,
})
export const EndpointAnswer = Schema.Struct({ endpoint: Endpoint })
export const EndpointWithHealth = Schema.Struct({
  endpoint: Endpoint,
  health: Schema.optionalKey(EndpointHealth),
})
export const EndpointStatusRequest = Schema.Struct({
  status: EndpointStatus,
  reason: Schema.optionalKey(Schema.String),
})
/** A null value keeps the stored one: the masked headers sent back unchanged change nothing. */
export const CustomHeadersRequest = Schema.Struct({
  custom_headers: Schema.Record(Schema.String, Schema.NullOr(Schema.String)),
})
/** One custom header's value, revealed to an admin (audited). */
export const CustomHeaderValueAnswer = Schema.Struct({
  header: Schema.Struct({ name: Schema.String, value: Schema.String }),
})
/** The test delivery, `held` when its endpoint is suspended (it goes out once the endpoint is active). */
export const TestDeliveryAnswer = Schema.Struct({
  delivery: Schema.Struct({ id: Schema.Number, status: Schema.Literals(["pending", "held"]) }),
})

// Replays of an endpoint's missed events (the partner API's replay, started from the console).

export { ReplayStatuses }
export const Replay = Schema.Struct({
  id: Schema.Number,
  endpoint_id: Schema.Number,
  status: Schema.Literals(ReplayStatuses),
  /** Events found when it was asked for: stored in the range, subscribed, not delivered to the endpoint. */
  total: Schema.Number,
  /** Of those, how many went out as new deliveries so far. */
  sent: Schema.Number,
  since: Timestamp,
  until: Timestamp,
  events: Schema.Array(Schema.String),
  created_at: Timestamp,
  ended_at: NullableTimestamp,
})
export type Replay = typeof Replay.Type
/** `POST /api/endpoints/:id/replays` and its preview: `until` is now and `events` every subscribed one if left out. */
export const ReplayRequest = Schema.Struct({
  since: Timestamp,
  until: Schema.optionalKey(Timestamp),
  events: Schema.optionalKey(Schema.Array(Schema.String)),
})
export type ReplayRequest = typeof ReplayRequest.Type
export const ReplayPreviewAnswer = Schema.Struct({ count: Schema.Number })
export const ReplayAnswer = Schema.Struct({ replay: Replay })
export const ReplayList = Schema.Struct({ replays: Schema.Array(Replay) })

// Signing secrets.

export const SubscriberSecret = Schema.Struct({
  created_at: Timestamp,
  expires_at: NullableTimestamp,
  /** The first 12 hex digits of the secret's SHA-256: which secret it is, never the secret. */
  fingerprint: Schema.String,
})
export type SubscriberSecret = typeof SubscriberSecret.Type

export const Subscriber = Schema.Struct({
  owner: Schema.NullOr(OwnerRef),
  provider: Schema.NullOr(ProviderRef),
  secrets: Schema.Array(SubscriberSecret),
})
export type Subscriber = typeof Subscriber.Type

export const SubscribersAnswer = Schema.Struct({ subscribers: Schema.Array(Subscriber) })
export const RotateSecretRequest = Schema.Struct({
  owner: Schema.optionalKey(Schema.String),
  provider: Schema.optionalKey(Schema.String),
  overlap_hours: Schema.Number,
})
export type RotateSecretRequest = typeof RotateSecretRequest.Type
/** `POST /api/secrets/end-overlap`: the owner's or provider's older secrets stop signing now. */
export const EndOverlapRequest = Schema.Struct({
  owner: Schema.optionalKey(Schema.String),
  provider: Schema.optionalKey(Schema.String),
})
export type EndOverlapRequest = typeof EndOverlapRequest.Type
/** How many older secrets stopped signing. */
export const EndedOverlap = Schema.Struct({ ended: Schema.Number })
/** The new secret, shown once. */
export const RotatedSecret = Schema.Struct({
  secret: Schema.String,
  created_at: Timestamp,
  previous_expires_at: NullableTimestamp,
})

// Audit log.

export const AuditEntry = Schema.Struct({
  id: Schema.Number,
  at: Timestamp,
  actor: Schema.String,
  channel: Schema.Literals(AuditChannels),
  action: Schema.String,
  target: Schema.NullOr(Schema.String),
  before: Schema.Unknown,
  after: Schema.Unknown,
})
export type AuditEntry = typeof AuditEntry.Type

export const AuditPage = Schema.Struct({ entries: Schema.Array(AuditEntry), next_cursor: NextCursor })

// Operator accounts.

export const OperatorAccount = Schema.Struct({
  email: Schema.String,
  role: OperatorRole,
  disabled: Schema.Boolean,
  created_at: Timestamp,
  last_sign_in_at: NullableTimestamp,
})
export type OperatorAccount = typeof OperatorAccount.Type

export const OperatorsAnswer = Schema.Struct({ operators: Schema.Array(OperatorAccount) })
export const OperatorAnswer = Schema.Struct({ operator: OperatorAccount })
export const OperatorCreated = Schema.Struct({ operator: OperatorAccount, password: Schema.String })
export const CreateOperatorRequest = Schema.Struct({ email: Schema.String, role: OperatorRole })
export const UpdateOperatorRequest = Schema.Struct({
  role: Schema.optionalKey(OperatorRole),
  disabled: Schema.optionalKey(Schema.Boolean),
})
export type UpdateOperatorRequest = typeof UpdateOperatorRequest.Type

// Policies.

/** A policy's statuses and products, as the policy list filters them. */
export { IN_FORCE, PolicyProducts, PolicyStatuses }

export const PolicyDelinquency = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["active", "resolved"]),
  amount_cents: Schema.Number,
  missed_installments: Schema.Number,
  resolution: Schema.optionalKey(Schema.String),
  resolved_amount_cents: Schema.optionalKey(Schema.Number),
  resolved_at: Schema.optionalKey(Timestamp),
  created_at: Timestamp,
})
export type PolicyDelinquency = typeof PolicyDelinquency.Type

export const PolicyMoveOut = Schema.Struct({
  id: Schema.Number,
  external_id: Schema.String,
  status: Schema.String,
  move_out_date: Schema.String,
  created_at: Timestamp,
})
export type PolicyMoveOut = typeof PolicyMoveOut.Type

/** A change of the policy, from the audit log. */
export const PolicyRevision = AuditEntry.mapFields(({ target: _, ...fields }) => fields)
export type PolicyRevision = typeof PolicyRevision.Type

/** A policy as `policies show` has it: the partner's payload, then what only operators see. */
export const PolicyDetail = Schema.Struct({
  id: Schema.String,
  policy_number: Schema.String,
  status: Schema.String,
  product_type: Schema.String,
  product_version: Schema.optionalKey(Schema.String),
  coverage_amount_cents: Schema.Number,
  coverage_start_date: Schema.String,
  coverage_end_date: Schema.String,
  admin_policy_url: Schema.String,
  source_prospect_id: Schema.optionalKey(Schema.String),
  owner_slug: Schema.String,
  policy_url: Schema.NullOr(Schema.String),
  owner_today: Schema.String,
  /** The owner's date when the policy was sold (its test clock's in staging and development). */
  issued_on: Schema.String,
  insured_name: Schema.NullOr(Schema.String),
  premises: Schema.NullOr(Schema.String),
  unit_name: Schema.NullOr(Schema.String),
  policy_holder_name: Schema.NullOr(Schema.String),
  cadence: Schema.String,
  premium_cents: Schema.Number,
  payments: Schema.Number,
  installments_billed: Schema.Number,
  next_charge_on: Schema.NullOr(Schema.String),
  card_last4: Schema.NullOr(Schema.String),
  cancellation_reason: Schema.optionalKey(Schema.String),
  delinquencies: Schema.Array(PolicyDelinquency),
  move_outs: Schema.Array(PolicyMoveOut),
  revisions: Schema.Array(PolicyRevision),
})
export type PolicyDetail = typeof PolicyDetail.Type

export const PolicySummary = Schema.Struct({
  id: Schema.String,
  policy_number: Schema.String,
  status: Schema.String,
  product_type: Schema.String,
  owner_slug: Schema.String,
  insured_name: Schema.NullOr(Schema.String),
})
export type PolicySummary = typeof PolicySummary.Type

export const RevisionRequest = Schema.Struct({
  coverage_cents: Schema.optionalKey(Schema.Number),
  start: Schema.optionalKey(Schema.String),
  end: Schema.optionalKey(Schema.String),
  unit: Schema.optionalKey(Schema.String),
  property: Schema.optionalKey(Schema.String),
})
export type RevisionRequest = typeof RevisionRequest.Type

export const PolicyAnswer = Schema.Struct({ policy: PolicyDetail })
/** `GET /api/policies`: the policy of `number`, or a page of the list (newest first) under its filters. */
export const PoliciesAnswer = Schema.Struct({
  policies: Schema.Array(PolicySummary),
  next_cursor: NextCursor,
})
export const RevisionAnswer = Schema.Struct({
  changed: Schema.Boolean,
  canceled: Schema.Boolean,
  policy: PolicyDetail,
})
export const DelinquencyAnswer = Schema.Struct({ delinquency: PolicyDelinquency })

import { Schema, SchemaTransformation } from "effect"
import { EventNames, isEventName } from "../events/Catalog.ts"
import { FIELD_LIMITS } from "../contract/FieldLimits.ts"
import { hasControlCharacter } from "../platform/Text.ts"
import { DeliveryStatuses, EndpointStatuses } from "./Statuses.ts"

export { DeliveryStatuses, EndpointStatuses }
export const EndpointStatus = Schema.Literals(EndpointStatuses).annotate({
  identifier: "WebhookEndpointStatus",
  description:
    "`active` endpoints receive deliveries; a `suspended` one's events are recorded as pending deliveries and " +
    "sent once it is active again; `disabled` ones receive none.",
})
export type EndpointStatus = typeof EndpointStatus.Type

export const DeliveryStatus = Schema.Literals(DeliveryStatuses).annotate({
  identifier: "WebhookDeliveryStatus",
  description:
    "Where a delivery is: recorded, in flight, delivered, waiting for a retry, throttled, or failed.",
})
export type DeliveryStatus = typeof DeliveryStatus.Type

/** Bounds of what an endpoint stores. */
export const MAX_NAME_LENGTH = FIELD_LIMITS.name
export const MAX_URL_LENGTH = FIELD_LIMITS.destination_url
/** Delivery list paging: the published `page` / `per_page` parameters. */
export const DEFAULT_PER_PAGE = 25
export const MAX_PER_PAGE = 100
/** The longest overlap an operator may give old secrets in a rotation. */
export const MAX_OVERLAP_MS = 30 * 24 * 3600 * 1000

const timestamp = (description: string) => Schema.String.annotate({ format: "date-time", description })
const nullableTimestamp = (description: string) =>
  Schema.NullOr(Schema.String.annotate({ format: "date-time" })).annotate({ description })

/** An endpoint as every route answers it. */
export const WebhookEndpoint = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  destination_url: Schema.String.annotate({ description: "HTTPS URL the deliveries are POSTed to." }),
  status: EndpointStatus,
  events: Schema.Array(Schema.String).annotate({ description: "Event names the endpoint receives." }),
  suspension_reason: Schema.NullOr(Schema.String).annotate({
    description:
      "Why the service suspended or disabled the endpoint (for example a 410 Gone answer), or null.",
  }),
  created_at: timestamp("When the endpoint was registered."),
  updated_at: timestamp("When it last changed."),
}).annotate({ identifier: "WebhookEndpoint" })
export type WebhookEndpoint = typeof WebhookEndpoint.Type

export const EndpointResponse = Schema.Struct({
  status_code: Schema.Literal(200),
  endpoint: WebhookEndpoint,
}).annotate({ identifier: "WebhookEndpointResponse" })

export const EndpointListResponse = Schema.Struct({
  status_code: Schema.Literal(200),
  endpoints: Schema.Array(WebhookEndpoint),
}).annotate({ identifier: "WebhookEndpointListResponse" })

/**
 * A field of an endpoint body. Each failure carries the published message whole ("Name must be a string"); a
 * missing field or `null` reads as blank ("Name can't be blank"), as the published API answers both. `encoded`
 * checks the value as sent, and those checks show in the OpenAPI document; `decode` turns it (`blank` for
 * `null`) into what is stored, which `stored` checks.
 */
const endpointField = <A>(options: {
  readonly label: string
  readonly mustBe: string
  readonly encoded: Schema.Codec<A>
  readonly blank: A
  readonly decode: (value: A) => A
  readonly stored: Schema.Codec<A>
  readonly description: string
}) =>
  Schema.NullOr(options.encoded)
    .annotate({
      message: `${options.label} must be ${options.mustBe}`,
      description: `${options.description} \`null\` counts as blank.`,
    })
    .pipe(
      Schema.decodeTo(
        options.stored,
        SchemaTransformation.transform<A, A | null>({
          decode: (value) => options.decode(value ?? options.blank),
          encode: (value) => value,
        }),
      ),
      Schema.annotateKey({ messageMissingKey: `${options.label} can't be blank` }),
    )

const filter = <A>(problem: (value: A) => string | undefined, jsonSchema?: Record<string, unknown>) =>
  Schema.makeFilter(problem, jsonSchema === undefined ? undefined : { toJsonSchema: () => jsonSchema })

const EndpointName = endpointField({
  label: "Name",
  mustBe: "a string",
  encoded: Schema.String.check(
    filter(
      (text: string) =>
        text.trim().length > MAX_NAME_LENGTH
          ? `Name is too long (maximum is ${MAX_NAME_LENGTH} characters)`
          : hasControlCharacter(text.trim())
            ? "Name must not contain control characters"
            : undefined,
      { maxLength: MAX_NAME_LENGTH, pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*$" },
    ),
  ),
  blank: "",
  decode: (text: string) => text.trim(),
  stored: Schema.String.check(filter((name: string) => (name === "" ? "Name can't be blank" : undefined))),
  description: `A label, 1 to ${MAX_NAME_LENGTH} characters; surrounding spaces are dropped.`,
})

/** Why `text` cannot be a destination, the first reason only; whether its host is private is checked apart. */
const destinationProblem = (text: string) => {
  if (text === "") return "Destination url can't be blank"
  if (/\s/.test(text) || hasControlCharacter(text) || !URL.canParse(text)) {
    return "Destination url is not a valid URL"
  }
  const url = new URL(text)
  if (url.protocol !== "https:") return "Destination url must use HTTPS"
  if (url.hostname === "") return "Destination url must name a host"
  if (url.username !== "" || url.password !== "") return "Destination url must not contain credentials"
  return undefined
}

const DestinationUrl = endpointField({
  label: "Destination url",
  mustBe: "a string",
  encoded: Schema.String.check(
    filter(
      (text: string) =>
        text.length > MAX_URL_LENGTH
          ? `Destination url is too long (maximum is ${MAX_URL_LENGTH} characters)`
          : undefined,
      { maxLength: MAX_URL_LENGTH },
    ),
  ),
  blank: "",
  decode: (text: string) => text,
  stored: Schema.String.check(filter(destinationProblem)),
  description: `An https URL with a host and no credentials, at most ${MAX_URL_LENGTH} characters.`,
})

/** Unknown event names quoted back in a message, at most this many, each cut to 80 characters. */
const MAX_NAMED_UNKNOWN = 10

const unknownEvents = (names: ReadonlyArray<string>) => {
  const unknown = names.filter((name) => !isEventName(name))
  if (unknown.length === 0) return undefined
  const named = unknown
    .slice(0, MAX_NAMED_UNKNOWN)
    .map((name) => (name.length > 80 ? `${name.slice(0, 80)}…` : name))
  const more = unknown.length > MAX_NAMED_UNKNOWN ? ` and ${unknown.length - MAX_NAMED_UNKNOWN} more` : ""
  return `Events include unknown events: ${named.join(", ")}${more}`
}

const Events = endpointField({
  label: "Events",
  mustBe: "an array of event names",
  // Unknown names are reported together by `stored`, so each item is only documented as a catalog name.
  encoded: Schema.Array(
    Schema.String.annotate({ message: "Events must be an array of event names" }).check(
      filter(() => undefined, { enum: [...EventNames] }),
    ),
  ),
  blank: [] as ReadonlyArray<string>,
  decode: (names: ReadonlyArray<string>) => [...new Set(names)],
  stored: Schema.Array(Schema.String).check(
    filter((names: ReadonlyArray<string>) => (names.length === 0 ? "Events can't be blank" : undefined)),
    filter(unknownEvents),
  ),
  description: "At least one event name of the catalog (there is no wildcard); repeated names count once.",
})

const RequestedStatus = EndpointStatus.annotate({ message: "Status is invalid" })

/** What `POST` takes inside `endpoint`; a `status` is checked but the endpoint starts `active` whatever it says. */
export const EndpointCreateFields = Schema.Struct({
  name: EndpointName,
  destination_url: DestinationUrl,
  events: Events,
  status: Schema.optionalKey(RequestedStatus).pipe(
    Schema.annotateKey({
      description: "Ignored: an endpoint starts `active` (an invalid value is still refused).",
    }),
  ),
})

/** What `PUT` takes inside `endpoint`: any subset of the fields; an omitted field keeps its value. */
export const EndpointUpdateFields = Schema.Struct({
  name: Schema.optionalKey(EndpointName),
  destination_url: Schema.optionalKey(DestinationUrl),
  events: Schema.optionalKey(Events),
  status: Schema.optionalKey(RequestedStatus),
})

export const EndpointCreateRequest = Schema.Struct({ endpoint: EndpointCreateFields }).annotate({
  identifier: "WebhookEndpointCreateRequest",
})

export const EndpointUpdateRequest = Schema.Struct({ endpoint: EndpointUpdateFields }).annotate({
  identifier: "WebhookEndpointUpdateRequest",
  description: "Any subset of the fields; an omitted field keeps its value.",
})

/** One attempt of a delivery: what came back, or why nothing did. */
export const DeliveryAttempt = Schema.Struct({
  series: Schema.Int.annotate({ description: "1, then one more for each manual retry of the delivery." }),
  attempt_number: Schema.Int,
  started_at: timestamp("When the request started."),
  status_code: Schema.NullOr(Schema.Int).annotate({ description: "The HTTP status answered, or null." }),
  duration_ms: Schema.NullOr(Schema.Int),
  failure_reason: Schema.NullOr(Schema.String),
  response_body: Schema.NullOr(Schema.String).annotate({
    description: "The first 4 KB of the answer's body.",
  }),
}).annotate({ identifier: "WebhookDeliveryAttempt" })

const deliveryFields = {
  id: Schema.Int.annotate({ description: "The delivery id, also sent as `X-Webhook-Delivery`." }),
  endpoint_id: Schema.Int,
  status: DeliveryStatus,
  attempt_number: Schema.Int.annotate({ description: "The attempt due next, or the last one made." }),
  payload: Schema.Unknown.annotate({ description: "The exact JSON body sent, parsed." }),
  last_attempted_at: nullableTimestamp("When the last attempt started."),
  delivered_at: nullableTimestamp("When a 2xx answer came."),
  next_retry_at: nullableTimestamp("When the next attempt is due."),
  last_attempt_failure_reason: Schema.NullOr(Schema.String),
  duration_ms: Schema.NullOr(Schema.Int).annotate({ description: "Duration of the last attempt." }),
  created_at: timestamp("When the event was recorded for the endpoint."),
  updated_at: timestamp("When the delivery last changed."),
}

export const WebhookDelivery = Schema.Struct(deliveryFields).annotate({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type

export const WebhookDeliveryDetail = Schema.Struct({
  ...deliveryFields,
  attempts: Schema.Array(DeliveryAttempt).annotate({ description: "Every attempt made, oldest first." }),
}).annotate({ identifier: "WebhookDeliveryDetail" })
export type WebhookDeliveryDetail = typeof WebhookDeliveryDetail.Type

export const PageMeta = Schema.Struct({
  page: Schema.Int,
  per_page: Schema.Int,
  total_count: Schema.Int,
  total_pages: Schema.Int,
}).annotate({ identifier: "PageMeta" })

export const DeliveryListResponse = Schema.Struct({
  status_code: Schema.Literal(200),
  deliveries: Schema.Array(WebhookDelivery),
  meta: PageMeta,
}).annotate({ identifier: "WebhookDeliveryListResponse" })

export const DeliveryResponse = Schema.Struct({
  status_code: Schema.Literal(200),
  delivery: WebhookDeliveryDetail,
}).annotate({ identifier: "WebhookDeliveryResponse" })

/** Whose endpoints a route manages: an owner's (by slug) or a provisioned provider's (by name). */
export type SubscriberRef =
  { readonly kind: "owner"; readonly slug: string } | { readonly kind: "provider"; readonly name: string }

export const describeSubscriber = (ref: SubscriberRef) =>
  ref.kind === "owner" ? `owner:${ref.slug}` : `provider:${ref.name}`

/** An endpoint body that breaks a rule: each field with its message, as the published 422 shows them. */
export class EndpointInvalid extends Schema.TaggedError<EndpointInvalid>()("EndpointInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

/** Paging or filter parameters of the delivery list that mean nothing. */
export class DeliveryQueryInvalid extends Schema.TaggedError<DeliveryQueryInvalid>()("DeliveryQueryInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

/** No such endpoint for this subscriber (never registered, deleted, or someone else's). */
export class EndpointNotFound extends Schema.TaggedError<EndpointNotFound>()("EndpointNotFound", {}) {}

/** The endpoint's owner or provider has no custom header of that name. */
export class CustomHeaderNotFound extends Schema.TaggedError<CustomHeaderNotFound>()(
  "CustomHeaderNotFound",
  {},
) {}

/** No such delivery of this endpoint. */
export class DeliveryNotFound extends Schema.TaggedError<DeliveryNotFound>()("DeliveryNotFound", {}) {}

/** The provider has not been provisioned by the operators yet. */
export class ProviderNotProvisioned extends Schema.TaggedError<ProviderNotProvisioned>()(
  "ProviderNotProvisioned",
  { provider: Schema.String },
) {}

/** An operator command names an owner slug that does not exist. */
export class OwnerUnknown extends Schema.TaggedError<OwnerUnknown>()("OwnerUnknown", {
  slug: Schema.String,
}) {}

/** An operator command the service refuses: unknown owner or provider, invalid header or duration. */
export class WebhookCommandRejected extends Schema.TaggedError<WebhookCommandRejected>()(
  "WebhookCommandRejected",
  { message: Schema.String },
) {}

/** Headers of every delivery, after any configured custom headers (which cannot override these). */
export const DeliveryHeaders = {
  "X-Webhook-Event": Schema.String.annotate({ description: "The event name, same as `event` in the body." }),
  "X-Webhook-Delivery": Schema.String.annotate({
    description: "Delivery id, stable across retries of one delivery: deduplicate on it.",
  }),
  "X-Webhook-Timestamp": Schema.String.annotate({
    description: "Unix seconds of this attempt; equals the signature's `t`.",
  }).check(Schema.isPattern(/^\d+$/u)),
  "X-Webhook-Signature": Schema.String.annotate({
    description:
      "`t=<timestamp>,v1=<hex>`. `v1` is the lowercase hex HMAC-SHA256, keyed with the owner's signing secret, of " +
      "the string `<timestamp>.<raw_request_body>`, where the timestamp equals `t` and `X-Webhook-Timestamp`. " +
      "While a rotated secret is still active the header carries one `v1` per active secret, newest first " +
      "(`t=<ts>,v1=<new>,v1=<old>`): accept the delivery when any of them matches. " +
      "Verify over the raw body bytes, not re-serialized JSON, and compare in constant time; answer 401 when it " +
      "does not match. The service neither rejects nor re-signs by timestamp age: a retried delivery carries a " +
      "valid signature for its own attempt timestamp.",
  }).check(Schema.isPattern(/^t=\d+(?:,v1=[0-9a-f]{64})+$/u)),
} as const

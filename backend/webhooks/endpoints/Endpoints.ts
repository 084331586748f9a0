import { isIP } from "node:net"
import { Context, Effect, Layer } from "effect"
import type { AuditEntry } from "../../audit/Audit.ts"
import { WebhookConfig } from "../Config.ts"
import { iso, isoOrNull } from "../../platform/Dates.ts"
import { Db } from "../../platform/Db.ts"
import { decodeFields } from "../../platform/Validation.ts"
import {
  DEFAULT_PER_PAGE,
  DeliveryNotFound,
  DeliveryQueryInvalid,
  type DeliveryStatus,
  DeliveryStatuses,
  EndpointCreateFields,
  EndpointInvalid,
  EndpointNotFound,
  EndpointUpdateFields,
  MAX_PER_PAGE,
  type SubscriberRef,
  type WebhookDelivery,
  type WebhookDeliveryDetail,
  type WebhookEndpoint,
} from "../Domain.ts"
import { isForbiddenAddress, isLocalhostName } from "../delivery/Egress.ts"
import {
  type AttemptRow,
  type DeliveryRow,
  type EndpointChanges,
  type EndpointRow,
  WebhooksRepo,
} from "./Repo.ts"
import { Secrets } from "./Secrets.ts"

type Fields = Record<string, string>

/** Ids are positive integers that JSON carries exactly; anything else names no record (404). */
const ID = /^[1-9]\d{0,14}$/

/** A private address literal or a localhost name; names that resolve privately are refused at send time. */
const isPrivateHost = (hostname: string) => {
  const host = hostname.replace(/^\[|\]$/g, "")
  return isLocalhostName(host) || (isIP(host) !== 0 && isForbiddenAddress(host))
}

const PRIVATE_DESTINATION = "Destination url must be a publicly reachable host"

/**
 * An endpoint body as its route decoded it: the changes it asks for, or each failing field's message with the
 * destination sent when the schema took it. A refusal is handed over rather than answered by the route: a missing
 * endpoint or provider is a 404 whatever the body says, and the private-destination rule adds its message to the
 * schema's.
 */
export type EndpointBody =
  { readonly changes: EndpointChanges } | { readonly fields: Fields; readonly destinationUrl?: string }

const decodeCreate = decodeFields(EndpointCreateFields)
const decodeUpdate = decodeFields(EndpointUpdateFields)

/**
 * The changes an endpoint's fields ask for: on creation every field but `status` is required, on update any
 * subset. Unknown keys are ignored, as the published API does; every failing field is reported, with its first
 * message. The service refuses a failing body once it has found the endpoint, and checks a private destination.
 */
export const readEndpointFields = (
  endpoint: Readonly<Record<string, unknown>>,
  creating: boolean,
): EndpointBody => {
  const decoded = creating ? decodeCreate(endpoint) : decodeUpdate(endpoint)
  if (!("errors" in decoded)) return { changes: decoded.value as EndpointChanges }
  const fields: Fields = {}
  for (const [path, messages] of Object.entries(decoded.errors)) fields[path.split(".")[0]!] ??= messages[0]!
  const url = endpoint.destination_url
  return fields.destination_url === undefined && typeof url === "string"
    ? { fields, destinationUrl: url }
    : { fields }
}

/** The changes of `body`, or every failing field; whether a private destination is allowed is the deployment's choice. */
const checkEndpoint = (body: EndpointBody, allowPrivate: boolean) => {
  const fields: Fields = "fields" in body ? { ...body.fields } : {}
  const url = "fields" in body ? body.destinationUrl : body.changes.destination_url
  if (!allowPrivate && fields.destination_url === undefined && url !== undefined && URL.canParse(url)) {
    if (isPrivateHost(new URL(url).hostname)) fields.destination_url = PRIVATE_DESTINATION
  }
  if ("fields" in body || Object.keys(fields).length > 0) return { fields }
  return { changes: body.changes }
}

export const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: Number(row.id),
  name: row.name,
  destination_url: row.destination_url,
  status: row.status,
  events: row.events,
  suspension_reason: row.suspension_reason,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
})

/** The bytes sent are JSON; should a stored body not be, it is shown as the text it is rather than failing. */
const parsedPayload = (bytes: Buffer): unknown => {
  const text = bytes.toString("utf8")
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

export const toDelivery = (row: DeliveryRow): WebhookDelivery => ({
  id: Number(row.id),
  endpoint_id: Number(row.endpoint_id),
  status: row.status,
  attempt_number: row.attempt_number,
  payload: parsedPayload(row.payload),
  last_attempted_at: isoOrNull(row.last_attempted_at),
  delivered_at: isoOrNull(row.delivered_at),
  next_retry_at: isoOrNull(row.next_retry_at),
  last_attempt_failure_reason: row.last_attempt_failure_reason,
  duration_ms: row.duration_ms,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
})

const toAttempt = (row: AttemptRow) => ({
  series: row.series,
  attempt_number: row.attempt_number,
  started_at: iso(row.started_at),
  status_code: row.status_code,
  duration_ms: row.duration_ms,
  failure_reason: row.failure_reason,
  response_body: row.response_body === null ? null : row.response_body.slice(0, 4096),
})

/** `page`, `per_page` and `status` of the delivery list; absent ones take their defaults. */
export const readDeliveryQuery = (query: URLSearchParams) => {
  const fields: Fields = {}
  const integer = (name: string, fallback: number, max: number, message: string) => {
    const raw = query.get(name)
    if (raw === null || raw === "") return fallback
    const value = /^\d{1,9}$/.test(raw) ? Number(raw) : 0
    if (value < 1 || value > max) fields[name] = message
    return value
  }
  const page = integer("page", 1, 1_000_000, "Page must be a positive integer")
  const perPage = integer(
    "per_page",
    DEFAULT_PER_PAGE,
    MAX_PER_PAGE,
    `Per page must be an integer from 1 to ${MAX_PER_PAGE}`,
  )
  const rawStatus = query.get("status")
  const status = rawStatus === null || rawStatus === "" ? undefined : rawStatus
  if (status !== undefined && !(DeliveryStatuses as ReadonlyArray<string>).includes(status)) {
    fields.status = `Status must be one of ${DeliveryStatuses.join(", ")}`
  }
  return Object.keys(fields).length > 0
    ? { fields }
    : { page, perPage, status: status as DeliveryStatus | undefined }
}

const endpointTarget = (id: string | number) => `endpoint:${id}`

/** What the audit log keeps of an endpoint's state. */
const audited = (row: EndpointRow) => ({
  name: row.name,
  destination_url: row.destination_url,
  events: row.events,
  status: row.status,
})

/**
 * Webhook endpoints of an owner or provider, and the deliveries made to them. The Partner API's changes are the
 * partner's own and unaudited; given an `actor` (the partner portal's session), a change is audited in its
 * transaction, so the entry exists exactly when the change committed.
 */
export class Endpoints extends Context.Service<Endpoints>()("partner-service/webhooks/Endpoints", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* WebhooksRepo
    const secrets = yield* Secrets
    const allowPrivate = (yield* WebhookConfig).allowPrivateDestinations

    /** The endpoint `id` of the subscriber (an owner without a subscriber has none). */
    const endpointOf = (ref: SubscriberRef, id: string, lock = false) =>
      Effect.gen(function* () {
        const subscriberId = yield* secrets.subscriber(ref, false)
        const row =
          subscriberId === undefined || !ID.test(id)
            ? undefined
            : yield* repo.endpoint(subscriberId, id, lock)
        if (row === undefined) return yield* new EndpointNotFound()
        return row
      })

    const audit = (actor: string | undefined, entry: Omit<AuditEntry, "actor">) =>
      actor === undefined ? Effect.void : repo.audit({ actor, ...entry })

    const create = Effect.fn("Endpoints.create")(function* (
      ref: SubscriberRef,
      body: EndpointBody,
      actor?: string,
    ) {
      // A provider not provisioned is a 404 whatever the body says.
      if (ref.kind === "provider") yield* secrets.subscriber(ref, false)
      const read = checkEndpoint(body, allowPrivate)
      if ("fields" in read) return yield* new EndpointInvalid({ fields: read.fields })
      const { name, destination_url, events } = read.changes
      return yield* db.transaction(
        Effect.gen(function* () {
          const subscriberId = (yield* secrets.subscriber(ref, true))!
          const row = yield* repo.insertEndpoint(subscriberId, {
            name: name!,
            destination_url: destination_url!,
            events: events!,
          })
          yield* audit(actor, {
            action: "endpoints.create",
            target: endpointTarget(row.id),
            after: audited(row),
          })
          return toEndpoint(row)
        }),
      )
    })

    const list = Effect.fn("Endpoints.list")(function* (ref: SubscriberRef) {
      const subscriberId = yield* secrets.subscriber(ref, false)
      if (subscriberId === undefined) return []
      return (yield* repo.endpoints(subscriberId)).map(toEndpoint)
    })

    const get = Effect.fn("Endpoints.get")(function* (ref: SubscriberRef, id: string) {
      return toEndpoint(yield* endpointOf(ref, id))
    })

    const update = Effect.fn("Endpoints.update")(function* (
      ref: SubscriberRef,
      id: string,
      body: EndpointBody,
      actor?: string,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const current = yield* endpointOf(ref, id, true)
          const read = checkEndpoint(body, allowPrivate)
          if ("fields" in read) return yield* new EndpointInvalid({ fields: read.fields })
          if (Object.keys(read.changes).length === 0) return toEndpoint(current)
          const status = read.changes.status
          // A reason describes the service's own suspension; the partner's choice of status replaces it.
          const clearReason = status !== undefined && (status === "active" || status !== current.status)
          const updated = yield* repo.updateEndpoint(current.id, read.changes, clearReason)
          yield* audit(actor, {
            action: "endpoints.update",
            target: endpointTarget(current.id),
            before: audited(current),
            after: audited(updated),
          })
          return toEndpoint(updated)
        }),
      )
    })

    /** Soft delete: the endpoint disappears and its undelivered deliveries fail as canceled. */
    const remove = Effect.fn("Endpoints.remove")(function* (ref: SubscriberRef, id: string, actor?: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const current = yield* endpointOf(ref, id, true)
          const canceled = yield* repo.deleteEndpoint(current.id)
          yield* audit(actor, {
            action: "endpoints.delete",
            target: endpointTarget(current.id),
            before: audited(current),
            details: { canceled_deliveries: canceled },
          })
          return canceled
        }),
      )
    })

    const deliveries = Effect.fn("Endpoints.deliveries")(function* (
      ref: SubscriberRef,
      endpointId: string,
      query: URLSearchParams,
    ) {
      const endpoint = yield* endpointOf(ref, endpointId)
      const read = readDeliveryQuery(query)
      if ("fields" in read) return yield* new DeliveryQueryInvalid({ fields: read.fields })
      const { total, rows } = yield* repo.deliveries(
        endpoint.id,
        read.status,
        read.perPage,
        (read.page - 1) * read.perPage,
      )
      return {
        deliveries: rows.map(toDelivery),
        meta: {
          page: read.page,
          per_page: read.perPage,
          total_count: total,
          total_pages: Math.ceil(total / read.perPage),
        },
      }
    })

    const delivery = Effect.fn("Endpoints.delivery")(function* (
      ref: SubscriberRef,
      endpointId: string,
      id: string,
    ) {
      const endpoint = yield* endpointOf(ref, endpointId)
      const row = ID.test(id) ? yield* repo.delivery(endpoint.id, id) : undefined
      if (row === undefined) return yield* new DeliveryNotFound()
      const attempts = yield* repo.attempts(row.id)
      return { ...toDelivery(row), attempts: attempts.map(toAttempt) } satisfies WebhookDeliveryDetail
    })

    /** A new series of attempts from attempt 1, due now, whatever the delivery's status (a delivered one is sent again). */
    const retry = Effect.fn("Endpoints.retry")(function* (
      ref: SubscriberRef,
      endpointId: string,
      id: string,
      actor?: string,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const endpoint = yield* endpointOf(ref, endpointId)
          const before = ID.test(id) ? yield* repo.delivery(endpoint.id, id) : undefined
          const retried = before === undefined ? [] : yield* repo.retryDeliveries([before.id], endpoint.id)
          if (before === undefined || retried.length === 0) return yield* new DeliveryNotFound()
          yield* audit(actor, {
            action: "deliveries.retry",
            target: `delivery:${before.id}`,
            before: { status: before.status, attempt_number: before.attempt_number },
            after: { status: "pending", attempt_number: 1 },
            details: { endpoint_id: Number(endpoint.id) },
          })
        }),
      )
    })

    /**
     * The same retry for operators, of deliveries of any endpoint (a deleted endpoint's fail at their attempt);
     * the ids that exist.
     */
    const retryDeliveries = Effect.fn("Endpoints.retryDeliveries")(function* (ids: ReadonlyArray<number>) {
      return yield* repo.retryDeliveries(ids)
    })

    return { create, list, get, update, remove, deliveries, delivery, retry, retryDeliveries }
  }),
}) {
  static readonly layer = Layer.effect(Endpoints, Endpoints.make).pipe(
    Layer.provide(WebhookConfig.layer),
    Layer.provide(Secrets.layer),
    Layer.provide(WebhooksRepo.layer),
  )
}

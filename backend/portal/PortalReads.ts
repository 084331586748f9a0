import { Clock, Context, Effect, Layer } from "effect"
import { resolveDescription } from "effect/SchemaAST"
import { EventCatalog, type EventName, EventNames } from "../events/Catalog.ts"
import { iso, isoOrNull } from "../platform/Dates.ts"
import { jsonOrText } from "../platform/Validation.ts"
import {
  encodeCursor,
  type FilterInput,
  readFilter,
  readId,
  readPage,
} from "../webhooks/endpoints/DeliveryFilters.ts"
import { type AttemptRow, type DeliveryListRow, DeliveryReads } from "../webhooks/endpoints/DeliveryReads.ts"
import { EndpointReads } from "../webhooks/endpoints/EndpointReads.ts"
import {
  endpointHealth,
  lastDaySince,
  lastHourSince,
  lastHourSummaries,
} from "../webhooks/endpoints/HealthWindows.ts"
import { WebhookConfig } from "../webhooks/Config.ts"
import {
  type CatalogEvent,
  type DeliveryDetailAnswer,
  type DeliveryPage,
  type EndpointHealthAnswer,
  type EndpointsAnswer,
  type PortalAttempt,
  type PortalDelivery,
  type PortalEndpoint,
  RESPONSE_EXCERPT_BYTES,
} from "./Api.ts"
import { PortalDeliveryNotFound, PortalFilterInvalid, type PortalSession } from "./Domain.ts"

/** The slug a provider's event examples name: a provider's endpoints receive several owners' events. */
const EXAMPLE_OWNER = "acme-properties"

export const NOT_YOUR_ENDPOINT = "must be one of your endpoints"
export const Q_FORM = "must be a delivery id (a whole number) or a prospect id (tpp_<n>)"
const PROSPECT_ID = /^tpp_([1-9]\d{0,18})$/i

/** The filters the portal's list takes from the query, passed on under the shared reader's names. */
const FILTER_KEYS = ["endpoint", "event_type", "status", "since", "until"] as const

/**
 * The first `RESPONSE_EXCERPT_BYTES` bytes of a body as UTF-8, cut before a character rather than through it.
 */
export const responseExcerpt = (body: string | null) => {
  if (body === null) return null
  const bytes = Buffer.from(body, "utf8")
  if (bytes.length <= RESPONSE_EXCERPT_BYTES) return body
  let end = RESPONSE_EXCERPT_BYTES
  // A continuation byte (10xxxxxx) at the cut means its character began before it.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return bytes.subarray(0, end).toString("utf8")
}

const toDelivery = (row: DeliveryListRow): PortalDelivery => ({
  id: Number(row.id),
  event_type: row.event,
  status: row.status,
  owner_slug: row.owner_slug,
  endpoint: { id: Number(row.endpoint_id), name: row.endpoint_name, destination_url: row.destination_url },
  attempt_number: row.attempt_number,
  attempt_count: row.attempt_count,
  created_at: iso(row.created_at),
  last_attempted_at: isoOrNull(row.last_attempted_at),
  next_retry_at: isoOrNull(row.next_retry_at),
  delivered_at: isoOrNull(row.delivered_at),
  last_status_code: row.last_status_code,
  last_failure_reason: row.last_failure_reason,
})

const toAttempt = (row: AttemptRow): PortalAttempt => ({
  series: row.series,
  attempt_number: row.attempt_number,
  started_at: iso(row.started_at),
  duration_ms: row.duration_ms,
  status_code: row.status_code,
  response_excerpt: responseExcerpt(row.response_body),
  failure_reason: row.failure_reason,
})

/** The catalog's example of `name` in the body it is delivered with, addressed to the session's holder. */
export const catalogExample = (session: PortalSession, name: EventName) => {
  const slug = "owner" in session.holder ? session.holder.owner.slug : EXAMPLE_OWNER
  const { dataKey, example } = EventCatalog[name]
  return { event: name, property_owner_slug: slug, data: { [dataKey]: example } }
}

/**
 * What a portal session reads: its holder's endpoints with their last hour, their deliveries and attempts, and
 * the event catalog. Every read is scoped by the holder's endpoint set, taken from the webhooks context for the
 * session's owner or provider, so nothing of another holder can be named, listed or opened.
 */
export class PortalReads extends Context.Service<PortalReads>()("partner-service/portal/PortalReads", {
  make: Effect.gen(function* () {
    const endpointReads = yield* EndpointReads
    const deliveryReads = yield* DeliveryReads
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const config = yield* WebhookConfig
    const holderEndpoints = (session: PortalSession) => endpointReads.subscriberEndpoints(session.holderId)

    type HolderEndpoint = Effect.Success<ReturnType<typeof holderEndpoints>>[number]

    /** Endpoints as the portal shows them, each with its last hour. */
    const shown = (live: ReadonlyArray<HolderEndpoint>) =>
      Effect.gen(function* () {
        const ids = live.map((endpoint) => endpoint.id)
        const at = yield* now
        const health = lastHourSummaries(
          yield* deliveryReads.healthBucketsOf(ids, lastHourSince(at)),
          ids,
          at,
        )
        return live.map((endpoint): PortalEndpoint => ({
          id: endpoint.id,
          name: endpoint.name,
          destination_url: endpoint.destination_url,
          events: endpoint.events,
          status: endpoint.status,
          last_hour: health.get(endpoint.id)!,
        }))
      })

    const endpoints = Effect.fn("PortalReads.endpoints")(function* (session: PortalSession) {
      const live = (yield* holderEndpoints(session)).filter((endpoint) => !endpoint.deleted)
      return { endpoints: yield* shown(live) } satisfies EndpointsAnswer
    })

    /** The id of one of the holder's endpoints not deleted; undefined for any other, as for an unknown one. */
    const liveEndpointId = Effect.fn("PortalReads.liveEndpointId")(function* (
      session: PortalSession,
      id: string,
    ) {
      const wanted = readId(id)
      if (wanted === undefined) return undefined
      const found = (yield* holderEndpoints(session)).find((endpoint) => endpoint.id === wanted)
      return found === undefined || found.deleted ? undefined : found.id
    })

    /** The health of one of the holder's endpoints not deleted, as the console shows it; undefined for any other. */
    const health = Effect.fn("PortalReads.health")(function* (session: PortalSession, id: string) {
      const found = yield* liveEndpointId(session, id)
      if (found === undefined) return undefined
      const at = yield* now
      const rows = yield* deliveryReads.healthBuckets(found, lastDaySince(at))
      const waiting = yield* deliveryReads.waiting(found)
      return {
        health: endpointHealth(rows, waiting, at, config.maxInFlightPerEndpoint),
      } satisfies EndpointHealthAnswer
    })

    /** One of the holder's endpoints not deleted, as the list shows it; undefined for any other. */
    const endpoint = Effect.fn("PortalReads.endpoint")(function* (session: PortalSession, id: number) {
      const found = (yield* holderEndpoints(session)).find((row) => row.id === id && !row.deleted)
      return found === undefined ? undefined : (yield* shown([found]))[0]
    })

    /** The list's filter from the query, `q` read as the shared reader's `id`; every wrong field named. */
    const readQuery = (input: FilterInput) => {
      const picked: Record<string, unknown> = {}
      for (const key of FILTER_KEYS) if (input[key] !== undefined) picked[key] = input[key]
      const fields: Record<string, string> = {}
      const q = typeof input.q === "string" ? input.q.trim() : undefined
      let prospect: string | undefined
      if (q !== undefined && q !== "") {
        const tpp = PROSPECT_ID.exec(q)
        if (readId(q) !== undefined) picked.id = q
        else if (tpp !== null) prospect = `tpp_${tpp[1]}`
        else fields.q = Q_FORM
      }
      const read = readFilter(picked)
      const paging = readPage(input)
      Object.assign(fields, "fields" in read ? read.fields : {}, paging.fields)
      return "fields" in read || Object.keys(fields).length > 0
        ? ({ fields } as const)
        : ({ filter: prospect === undefined ? read.filter : { ...read.filter, prospect }, paging } as const)
    }

    const deliveries = Effect.fn("PortalReads.deliveries")(function* (
      session: PortalSession,
      input: FilterInput,
    ) {
      const read = readQuery(input)
      if ("fields" in read) return yield* new PortalFilterInvalid({ fields: read.fields })
      const { filter, paging } = read
      const owned = (yield* holderEndpoints(session)).map((endpoint) => endpoint.id)
      if (filter.endpoint !== undefined && !owned.includes(filter.endpoint)) {
        return yield* new PortalFilterInvalid({ fields: { endpoint: NOT_YOUR_ENDPOINT } })
      }
      const set = filter.endpoint === undefined ? owned : [filter.endpoint]
      if (set.length === 0) return { deliveries: [], next_cursor: null } satisfies DeliveryPage
      // One row more than the page tells whether another page follows, without counting.
      const rows = yield* deliveryReads.page(
        filter,
        { endpoints: set, owners: undefined },
        paging.after,
        paging.limit + 1,
      )
      const shown = rows.slice(0, paging.limit)
      return {
        deliveries: shown.map(toDelivery),
        next_cursor: rows.length > paging.limit ? encodeCursor(shown[shown.length - 1]!) : null,
      } satisfies DeliveryPage
    })

    /** The delivery's row when it went to one of the holder's endpoints. */
    const ownedDelivery = (session: PortalSession, id: string) =>
      Effect.gen(function* () {
        const deliveryId = readId(id)
        const row = deliveryId === undefined ? undefined : yield* deliveryReads.detail(deliveryId)
        if (row === undefined) return yield* new PortalDeliveryNotFound()
        const owned = (yield* holderEndpoints(session)).map((endpoint) => endpoint.id)
        // Another holder's delivery answers as an unknown one does, so its existence is not told.
        if (!owned.includes(Number(row.endpoint_id))) return yield* new PortalDeliveryNotFound()
        return row
      })

    const delivery = Effect.fn("PortalReads.delivery")(function* (session: PortalSession, id: string) {
      const row = yield* ownedDelivery(session, id)
      const attempts = yield* deliveryReads.attempts(Number(row.id))
      const raw = row.payload.toString("utf8")
      return {
        delivery: {
          ...toDelivery(row),
          payload_raw: raw,
          payload: jsonOrText(raw),
          attempts: attempts.map(toAttempt),
        },
      } satisfies DeliveryDetailAnswer
    })

    /** A delivery of the holder's as the list shows it, with the endpoint it went to. */
    const deliverySummary = Effect.fn("PortalReads.deliverySummary")(function* (
      session: PortalSession,
      id: string,
    ) {
      const row = yield* ownedDelivery(session, id)
      return { delivery: toDelivery(row), endpointId: Number(row.endpoint_id) }
    })

    /** Every event of the catalog, its example in the body it is delivered with, addressed to the holder. */
    const events = (session: PortalSession) => ({
      events: EventNames.map((name): CatalogEvent => {
        const { payload, emittedWhen } = EventCatalog[name]
        return {
          name,
          description: resolveDescription(payload.ast) ?? `Emitted when ${emittedWhen}.`,
          emitted_when: emittedWhen,
          example: catalogExample(session, name),
        }
      }),
    })

    return { endpoints, endpoint, health, liveEndpointId, deliveries, delivery, deliverySummary, events }
  }),
}) {
  static readonly layer = Layer.effect(PortalReads, PortalReads.make).pipe(
    Layer.provide(Layer.mergeAll(EndpointReads.layer, DeliveryReads.layer)),
  )
}

import { Clock, Context, Effect, Layer, Schema } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { iso, isoOrNull } from "../platform/Dates.ts"
import { jsonOrText } from "../platform/Validation.ts"
import { DeliveryNotFound } from "../webhooks/Domain.ts"
import { Endpoints } from "../webhooks/endpoints/Endpoints.ts"
import { customHeaders, deliveryHeaders } from "../webhooks/delivery/Signer.ts"
import {
  decodeCursor,
  DEFAULT_LIMIT,
  encodeCursor,
  FilterKeys,
  type FilterInput,
  fromSearchParams,
  MAX_LIMIT,
  readFilter,
  readId,
  readPage,
} from "../webhooks/endpoints/DeliveryFilters.ts"
import {
  type AttemptRow,
  type DeliveryDetailRow,
  type DeliveryFilter,
  type DeliveryListRow,
  DeliveryReads,
  type FilterSets,
  type ShownStatus,
  ShownStatuses,
} from "../webhooks/endpoints/DeliveryReads.ts"
import type { Attempt, Delivery, DeliveryDetail, DeliveryPage } from "./Api.ts"
import { deliveryTimeline } from "./DeliveryTimeline.ts"

export { type DeliveryFilter, type ShownStatus, ShownStatuses }
export { DEFAULT_LIMIT, encodeCursor, FilterKeys, fromSearchParams, MAX_LIMIT, readFilter }

export type { Delivery, DeliveryDetail, DeliveryPage } from "./Api.ts"
export type DeliveryAttemptShown = Attempt

/** Filter, cursor or limit values that mean nothing: each field with its message (a 422). */
export class DeliveryFilterInvalid extends Schema.TaggedError<DeliveryFilterInvalid>()(
  "DeliveryFilterInvalid",
  {
    fields: Schema.Record(Schema.String, Schema.String),
  },
) {}

/** Owners one owner filter may name: a text matching more is too vague to read index range by range. */
const MAX_OWNERS = 100
const RESPONSE_EXCERPT = 4096

type Input = FilterInput

export const toDelivery = (row: DeliveryListRow): Delivery => ({
  id: Number(row.id),
  event_type: row.event,
  status: row.status,
  owner: { slug: row.owner_slug, name: row.owner_name ?? row.owner_slug },
  provider: row.provider_name === null ? null : { name: row.provider_name },
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

const toAttempt = (row: AttemptRow): DeliveryAttemptShown => ({
  series: row.series,
  attempt_number: row.attempt_number,
  started_at: iso(row.started_at),
  status_code: row.status_code,
  duration_ms: row.duration_ms,
  failure_reason: row.failure_reason,
  response_excerpt: row.response_body === null ? null : row.response_body.slice(0, RESPONSE_EXCERPT),
})

/**
 * Every delivery across owners and providers, for operators: the list under a filter (newest first, by cursor,
 * never counted), the count of a filter on demand (the bulk retry's preview), and one delivery with its payload,
 * headers and attempts.
 */
export class Deliveries extends Context.Service<Deliveries>()("partner-service/operator/Deliveries", {
  make: Effect.gen(function* () {
    const repo = yield* DeliveryReads
    const crypto = yield* Crypto
    const endpoints = yield* Endpoints

    /** The endpoint set the filter names (undefined: any endpoint), empty when it names none. */
    const endpointSet = (filter: DeliveryFilter) =>
      Effect.gen(function* () {
        if (filter.provider === undefined)
          return filter.endpoint === undefined ? undefined : [filter.endpoint]
        const ofProvider = yield* repo.providerEndpoints(filter.provider)
        return filter.endpoint === undefined ? ofProvider : ofProvider.filter((id) => id === filter.endpoint)
      })

    /** The endpoints and owners the filter names; a text matching too many owners is refused. */
    const filterSets = (filter: DeliveryFilter) =>
      Effect.gen(function* () {
        const endpoints = yield* endpointSet(filter)
        if (filter.owner === undefined) return { endpoints, owners: undefined } satisfies FilterSets
        const owners = yield* repo.ownerSlugs(filter.owner, MAX_OWNERS + 1)
        if (owners.length > MAX_OWNERS) {
          return yield* new DeliveryFilterInvalid({
            fields: { owner: `matches more than ${MAX_OWNERS} owners: type more of the slug or name` },
          })
        }
        return { endpoints, owners } satisfies FilterSets
      })

    /** Whether the sets leave nothing to read. */
    const none = (sets: FilterSets) => sets.endpoints?.length === 0 || sets.owners?.length === 0

    const filterOf = (input: Input) => {
      const read = readFilter(input)
      return "fields" in read
        ? Effect.fail(new DeliveryFilterInvalid({ fields: read.fields }))
        : Effect.succeed(read.filter)
    }

    const list = Effect.fn("Deliveries.list")(function* (input: Input) {
      const read = readFilter(input)
      const paging = readPage(input)
      const fields = { ...("fields" in read ? read.fields : {}), ...paging.fields }
      if ("fields" in read || Object.keys(fields).length > 0)
        return yield* new DeliveryFilterInvalid({ fields })
      const sets = yield* filterSets(read.filter)
      if (none(sets)) return { deliveries: [], next_cursor: null } satisfies DeliveryPage
      // One row more than the page tells whether another page follows, without counting.
      const rows = yield* repo.page(read.filter, sets, paging.after, paging.limit + 1)
      const shown = rows.slice(0, paging.limit)
      return {
        deliveries: shown.map(toDelivery),
        next_cursor: rows.length > paging.limit ? encodeCursor(shown[shown.length - 1]!) : null,
      } satisfies DeliveryPage
    })

    const count = Effect.fn("Deliveries.count")(function* (input: Input) {
      const filter = yield* filterOf(input)
      const sets = yield* filterSets(filter)
      return none(sets) ? 0 : yield* repo.count(filter, sets)
    })

    /**
     * The headers of the last attempt as it sent them: the signature's timestamp is that attempt's start (in
     * seconds, as the signer takes it), signed with the secrets active then; never attempted, as it would be
     * signed now. Custom headers are the subscriber's current ones, their values null (masked) for every role: an
     * admin reveals one on the endpoint, audited.
     */
    const requestHeaders = (row: DeliveryDetailRow, attempts: ReadonlyArray<AttemptRow>) =>
      Effect.gen(function* () {
        const last = attempts[attempts.length - 1]
        const at = last?.started_at ?? new Date(yield* Clock.currentTimeMillis)
        const sealed = yield* repo.secretsAt(row.subscriber_id, at)
        const secrets = yield* Effect.forEach(sealed, (s) =>
          Effect.map(crypto.open(s), (b) => b.toString("utf8")),
        )
        const headers = deliveryHeaders({
          custom: row.custom_headers,
          event: row.event,
          deliveryId: row.id,
          timestamp: Math.floor(at.getTime() / 1000),
          secrets,
          body: row.payload,
        })
        const masked = new Set(
          Object.keys(customHeaders(row.custom_headers)).map((name) => name.toLowerCase()),
        )
        return Object.fromEntries(
          Object.entries(headers).map(([name, value]) => {
            const lower = name.toLowerCase()
            return [lower, masked.has(lower) ? null : value]
          }),
        )
      })

    const detail = Effect.fn("Deliveries.detail")(function* (id: string | number) {
      const deliveryId = readId(id)
      const row = deliveryId === undefined ? undefined : yield* repo.detail(deliveryId)
      if (row === undefined) return yield* new DeliveryNotFound()
      const attempts = yield* repo.attempts(Number(row.id))
      const raw = row.payload.toString("utf8")
      return {
        ...toDelivery(row),
        payload_raw: raw,
        payload: jsonOrText(raw),
        request_headers: yield* requestHeaders(row, attempts),
        attempts: attempts.map(toAttempt),
        timeline: deliveryTimeline({
          accepted: row.event_accepted_at,
          committed: row.event_committed_at,
          published: row.event_published_at,
          routed: row.created_at,
          firstAttempt: attempts[0]?.started_at,
          delivered: row.delivered_at,
        }),
      } satisfies DeliveryDetail
    })

    /** The partner API's retry (a new series from attempt 1, same id) of any delivery; the delivery after it. */
    const retry = Effect.fn("Deliveries.retry")(function* (id: string | number) {
      const deliveryId = readId(id)
      const retried = deliveryId === undefined ? [] : yield* endpoints.retryDeliveries([deliveryId])
      if (retried.length === 0) return yield* new DeliveryNotFound()
      const row = yield* repo.detail(deliveryId!)
      return toDelivery(row!)
    })

    /**
     * The ids of up to `limit` deliveries matching a checked filter, newest first, after the position `after` (a
     * cursor this returned): a bulk retry's snapshot, batch by batch. `after` is null once nothing is left.
     */
    const matchingIds = Effect.fn("Deliveries.matchingIds")(function* (
      filter: DeliveryFilter,
      after: string | null,
      limit: number,
    ) {
      const sets = yield* filterSets(filter)
      if (none(sets)) return { ids: [], after: null }
      const position = after === null ? undefined : decodeCursor(after)
      const rows = yield* repo.ids(filter, sets, position, limit)
      const last = rows[rows.length - 1]
      return {
        ids: rows.map((row) => Number(row.id)),
        after: rows.length < limit || last === undefined ? null : encodeCursor(last),
      }
    })

    return { list, count, detail, retry, filterOf, matchingIds }
  }),
}) {
  static readonly layer = Layer.effect(Deliveries, Deliveries.make).pipe(Layer.provide(DeliveryReads.layer))
}

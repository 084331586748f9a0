import { Clock, Context, Effect, Layer } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { iso, isoOrNull } from "../platform/Dates.ts"
import { jsonOrText } from "../platform/Validation.ts"
import { DeliveryNotFound } from "../webhooks/Domain.ts"
import { Endpoints } from "../webhooks/endpoints/Endpoints.ts"
import { customHeaders, deliveryHeaders } from "../webhooks/delivery/Signer.ts"
import {
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
  type ShownStatus,
  ShownStatuses,
} from "../webhooks/endpoints/DeliveryReads.ts"
import { DeliveryFilterInvalid, DeliverySets } from "../webhooks/endpoints/DeliverySets.ts"
import type { Attempt, Delivery, DeliveryDetail, DeliveryPage } from "./Api.ts"
import { deliveryTimeline } from "./DeliveryTimeline.ts"

export { type DeliveryFilter, type ShownStatus, ShownStatuses }
export { DEFAULT_LIMIT, encodeCursor, FilterKeys, fromSearchParams, MAX_LIMIT, readFilter }
export { DeliveryFilterInvalid }

export type { Delivery, DeliveryDetail, DeliveryPage } from "./Api.ts"
export type DeliveryAttemptShown = Attempt

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
 * never counted), the count of a filter on demand, and one delivery with its payload, headers and attempts.
 */
export class Deliveries extends Context.Service<Deliveries>()("partner-service/operator/Deliveries", {
  make: Effect.gen(function* () {
    const repo = yield* DeliveryReads
    const crypto = yield* Crypto
    const endpoints = yield* Endpoints

    const { filterSets, none } = yield* DeliverySets

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
          lastAttempt: attempts.at(-1)?.started_at,
          status: row.status,
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

    return { list, count, detail, retry, filterOf }
  }),
}) {
  static readonly layer = Layer.effect(Deliveries, Deliveries.make).pipe(
    Layer.provide(Layer.mergeAll(DeliverySets.layer, DeliveryReads.layer)),
  )
}

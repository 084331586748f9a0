import { Clock, Context, Effect, Layer, Schema } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { instantProblemMessage, iso, isoOrNull, readInstant } from "../platform/Dates.ts"
import { hasControlCharacter } from "../platform/Text.ts"
import { DeliveryNotFound } from "../webhooks/Domain.ts"
import { Endpoints } from "../webhooks/endpoints/Endpoints.ts"
import { customHeaders, deliveryHeaders } from "../webhooks/delivery/Signer.ts"
import {
  type AttemptRow,
  type DeliveryDetailRow,
  type DeliveryFilter,
  type DeliveryListRow,
  DeliveryReads,
  type FilterSets,
  type PagePosition,
  type ShownStatus,
  ShownStatuses,
} from "../webhooks/endpoints/DeliveryReads.ts"
import type { Attempt, Delivery, DeliveryDetail, DeliveryPage } from "./Api.ts"
import { deliveryTimeline } from "./DeliveryTimeline.ts"

export { type DeliveryFilter, type ShownStatus, ShownStatuses }

export type { Delivery, DeliveryDetail, DeliveryPage } from "./Api.ts"
export type DeliveryAttemptShown = Attempt

/** Filter, cursor or limit values that mean nothing: each field with its message (a 422). */
export class DeliveryFilterInvalid extends Schema.TaggedError<DeliveryFilterInvalid>()(
  "DeliveryFilterInvalid",
  {
    fields: Schema.Record(Schema.String, Schema.String),
  },
) {}

export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 100
/** Owners one owner filter may name: a text matching more is too vague to read index range by range. */
const MAX_OWNERS = 100
/** The filter keys of the list, the count and a bulk retry. */
export const FilterKeys = [
  "owner",
  "provider",
  "endpoint",
  "event_type",
  "status",
  "since",
  "until",
  "id",
] as const

const ID = /^[1-9]\d{0,14}$/
const EVENT_NAME = /^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i
const MAX_TEXT = 255
const DATE_TIME_FORM = "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z"
const RESPONSE_EXCERPT = 4096

type Input = Readonly<Record<string, unknown>>

/** A query string's parameters (the first value of each) as the input the readers take. */
export const fromSearchParams = (params: URLSearchParams): Input => {
  const out: Record<string, string> = {}
  for (const [key, value] of params) if (!(key in out)) out[key] = value
  return out
}

/** Absent, null and empty mean "not filtered". */
const present = (input: Input, key: string) => {
  const value = input[key]
  return value === undefined || value === null || value === "" ? undefined : value
}

const readId = (value: unknown) => {
  if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return value
  if (typeof value === "string" && ID.test(value)) return Number(value)
  return undefined
}

const readText = (value: unknown) =>
  typeof value === "string" && value.length <= MAX_TEXT && !hasControlCharacter(value) ? value : undefined

/** The filter of `input` (a query's parameters or a JSON object), or every field that is wrong. */
export const readFilter = (
  input: Input,
): { readonly filter: DeliveryFilter } | { readonly fields: Record<string, string> } => {
  const fields: Record<string, string> = {}
  const filter: { -readonly [K in keyof DeliveryFilter]-?: DeliveryFilter[K] | undefined } = {
    owner: undefined,
    provider: undefined,
    endpoint: undefined,
    event_type: undefined,
    status: undefined,
    since: undefined,
    until: undefined,
    id: undefined,
  }
  const check = <A>(key: string, read: (value: unknown) => A | undefined, message: string) => {
    const value = present(input, key)
    if (value === undefined) return undefined
    const read_ = read(value)
    if (read_ === undefined) fields[key] = message
    return read_
  }
  const checkDate = (key: string) => {
    const value = present(input, key)
    if (value === undefined) return undefined
    const read =
      typeof value === "string" && DATE_TIME.test(value) ? readInstant(value) : { problem: "form" as const }
    if ("at" in read) return read.at
    fields[key] = instantProblemMessage(read.problem, DATE_TIME_FORM)
    return undefined
  }
  filter.owner = check("owner", readText, "must be an owner slug or part of an owner's name")
  filter.provider = check("provider", readText, "must be a provider name")
  filter.endpoint = check("endpoint", readId, "must be an endpoint id (a whole number)")
  filter.event_type = check(
    "event_type",
    (v) => (typeof v === "string" && v.length <= 100 && EVENT_NAME.test(v) ? v : undefined),
    "must be an event name such as policy.created",
  )
  filter.status = check(
    "status",
    (v) => ShownStatuses.find((s) => s === v),
    `must be one of ${ShownStatuses.join(", ")}`,
  )
  filter.since = checkDate("since")
  filter.until = checkDate("until")
  filter.id = check("id", readId, "must be a delivery id (a whole number)")
  if (filter.since && filter.until && filter.until <= filter.since) fields.until = "must be later than since"
  if (Object.keys(fields).length > 0) return { fields }
  const checked: Record<string, unknown> = {}
  for (const key of FilterKeys) if (filter[key] !== undefined) checked[key] = filter[key]
  return { filter: checked as DeliveryFilter }
}

/** The cursor is opaque to callers: the last row's `created_at` (microseconds) and id. */
export const encodeCursor = (row: { readonly created_us: string; readonly id: string }) =>
  Buffer.from(`${row.created_us}:${row.id}`, "utf8").toString("base64url")

const decodeCursor = (cursor: string): PagePosition | undefined => {
  const match = /^(\d{1,17}):([1-9]\d{0,14})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return match ? { createdUs: BigInt(match[1]!), id: Number(match[2]) } : undefined
}

const readPage = (input: Input) => {
  const fields: Record<string, string> = {}
  const rawLimit = present(input, "limit")
  let limit = DEFAULT_LIMIT
  if (rawLimit !== undefined) {
    const n = typeof rawLimit === "string" && /^\d{1,3}$/.test(rawLimit) ? Number(rawLimit) : rawLimit
    if (typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= MAX_LIMIT) limit = n
    else fields.limit = `must be an integer from 1 to ${MAX_LIMIT}`
  }
  const rawCursor = present(input, "cursor")
  const after = typeof rawCursor === "string" && rawCursor.length <= 64 ? decodeCursor(rawCursor) : undefined
  if (rawCursor !== undefined && after === undefined) fields.cursor = "is not a cursor of this list"
  return { fields, limit, after }
}

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

/** The stored bytes are JSON; should they not be, they are shown as the text they are. */
const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

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
        payload: parsed(raw),
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

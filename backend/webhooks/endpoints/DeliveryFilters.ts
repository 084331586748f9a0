import { instantProblemMessage, readInstant } from "../../platform/Dates.ts"
import { hasControlCharacter } from "../../platform/Text.ts"
import { type DeliveryFilter, type PagePosition, ShownStatuses } from "./DeliveryReads.ts"

/**
 * How a delivery list's filter, cursor and limit are read from a request, for every reader of `DeliveryReads.page`
 * (the console and the portal): each field checked, and every wrong one named with its message.
 */

export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 100
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

export type FilterInput = Readonly<Record<string, unknown>>

/** A query string's parameters (the first value of each) as the input the readers take. */
export const fromSearchParams = (params: URLSearchParams): FilterInput => {
  const out: Record<string, string> = {}
  for (const [key, value] of params) if (!(key in out)) out[key] = value
  return out
}

/** Absent, null and empty mean "not filtered". */
const present = (input: FilterInput, key: string) => {
  const value = input[key]
  return value === undefined || value === null || value === "" ? undefined : value
}

/** A delivery's or an endpoint's id, as a number or its digits; undefined when it is not one. */
export const readId = (value: unknown) => {
  if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return value
  if (typeof value === "string" && ID.test(value)) return Number(value)
  return undefined
}

const readText = (value: unknown) =>
  typeof value === "string" && value.length <= MAX_TEXT && !hasControlCharacter(value) ? value : undefined

/** The filter of `input` (a query's parameters or a JSON object), or every field that is wrong. */
export const readFilter = (
  input: FilterInput,
): { readonly filter: DeliveryFilter } | { readonly fields: Record<string, string> } => {
  const fields: Record<string, string> = {}
  // A prospect is the portal's search (`q=tpp_<n>`), never a filter key of a list or a bulk retry.
  const filter: {
    -readonly [K in Exclude<keyof DeliveryFilter, "prospect">]-?: DeliveryFilter[K] | undefined
  } = {
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

export const decodeCursor = (cursor: string): PagePosition | undefined => {
  const match = /^(\d{1,17}):([1-9]\d{0,14})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return match ? { createdUs: BigInt(match[1]!), id: Number(match[2]) } : undefined
}

/** The page's size and start (`limit`, `cursor`), with the fields that are wrong. */
export const readPage = (input: FilterInput) => {
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

import { Effect } from "effect"
import { instantProblemMessage, readInstant } from "../../platform/Dates.ts"
import { decodeCursor } from "./Cursor.ts"
import { invalid } from "./Route.ts"

const MAX_LIMIT = 100
const DEFAULT_LIMIT = 50
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

/** Reads query parameters into `fields` (a message per bad one); empty values count as absent. */
export const queryReader = (query: URLSearchParams) => {
  const fields: Record<string, string> = {}
  const text = (name: string, max = 200) => {
    const value = query.get(name)
    if (value === null || value === "") return undefined
    if (value.length > max) fields[name] = `is too long (maximum is ${max} characters)`
    return value
  }
  const date = (name: string) => {
    const value = text(name, 40)
    if (value === undefined) return undefined
    const read = DATE_TIME.test(value) ? readInstant(value) : { problem: "form" as const }
    if ("at" in read) return read.at
    fields[name] = instantProblemMessage(
      read.problem,
      "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z",
    )
    return undefined
  }
  const limit = () => {
    const value = text("limit", 4)
    if (value === undefined) return DEFAULT_LIMIT
    const n = /^\d+$/.test(value) ? Number(value) : 0
    if (n < 1 || n > MAX_LIMIT) fields.limit = `must be an integer from 1 to ${MAX_LIMIT}`
    return n
  }
  const cursor = () => {
    const value = text("cursor", 64)
    if (value === undefined) return undefined
    const id = decodeCursor(value)
    if (id === undefined) fields.cursor = "is not a cursor of this list"
    return id
  }
  return { fields, text, date, limit, cursor }
}

/** What the reader read, or the 422 that names every bad parameter. */
export const checkedQuery = <A>(reader: ReturnType<typeof queryReader>, read: A) =>
  Object.keys(reader.fields).length > 0
    ? Effect.fail(invalid("Invalid filter.", "filter", reader.fields))
    : Effect.succeed(read)

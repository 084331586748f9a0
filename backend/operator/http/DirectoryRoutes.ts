import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { hasControlCharacter } from "../../platform/Text.ts"
import { Directory } from "../Directory.ts"
import { encodeCursor } from "./Cursor.ts"
import { checkedQuery, queryReader } from "./Query.ts"
import { route } from "./Route.ts"

const MAX_QUERY = 200

/** The console's owners, an owner's page, a prospect's page and the header's search box; any role reads them. */
export const directoryRoutes = [
  route("GET", "/api/owner-list", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const q = reader.text("q", 100)
      if (q !== undefined && hasControlCharacter(q)) reader.fields.q = "must not contain control characters"
      const read = yield* checkedQuery(reader, {
        q: q?.trim() || undefined,
        cursor: reader.cursor(),
        limit: reader.limit(),
      })
      const page = yield* (yield* Directory).owners(read.q, read.cursor, read.limit)
      return json(200, { owners: page.owners, next_cursor: encodeCursor(page.nextId) })
    }),
  ),
  route("GET", "/api/owners/:slug", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { owner: yield* (yield* Directory).owner(request.params.slug ?? "") })
    }),
  ),
  route("GET", "/api/prospects/:id", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { prospect: yield* (yield* Directory).prospect(request.params.id ?? "") })
    }),
  ),
  route("GET", "/api/search", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const raw = reader.text("q", MAX_QUERY)
      const q = raw?.trim() ?? ""
      if (raw === undefined || q === "") reader.fields.q = "is required"
      else if (hasControlCharacter(q)) reader.fields.q = "must not contain control characters"
      yield* checkedQuery(reader, q)
      return json(200, { query: q, results: yield* (yield* Directory).search(q) })
    }),
  ),
]

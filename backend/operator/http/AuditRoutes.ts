import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { Operators } from "../Operators.ts"
import { encodeCursor } from "./Cursor.ts"
import { checkedQuery, queryReader } from "./Query.ts"
import { route } from "./Route.ts"

/** The audit log, newest first, a page at a time. */
export const auditRoutes = [
  route("GET", "/api/audit", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const filter = yield* checkedQuery(reader, {
        actor: reader.text("actor"),
        action: reader.text("action"),
        target: reader.text("target"),
        since: reader.date("since"),
        until: reader.date("until"),
        before: reader.cursor(),
        limit: reader.limit(),
      })
      const page = yield* (yield* Operators).auditLog(filter)
      return json(200, { entries: page.entries, next_cursor: encodeCursor(page.lastId) })
    }),
  ),
]

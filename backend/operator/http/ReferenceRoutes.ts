import { Effect } from "effect"
import { EventNames } from "../../events/Catalog.ts"
import { json } from "../../platform/Http.ts"
import { Operators } from "../Operators.ts"
import { checkedQuery, queryReader } from "./Query.ts"
import { route } from "./Route.ts"

/** The owners, providers and event types the console's filters offer. */
export const referenceRoutes = [
  route("GET", "/api/owners", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const q = yield* checkedQuery(reader, reader.text("q", 100))
      return json(200, { owners: yield* (yield* Operators).owners(q) })
    }),
  ),
  route("GET", "/api/providers", "viewer", () =>
    Effect.gen(function* () {
      return json(200, { providers: yield* (yield* Operators).providers })
    }),
  ),
  route("GET", "/api/event-types", "viewer", () => Effect.succeed(json(200, { event_types: EventNames }))),
]

import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { System } from "../System.ts"
import { actorOf, route } from "./Route.ts"

/** The system page: streams, consumers, the outbox and dead letters; publishing a dead letter again. */
export const systemRoutes = [
  route("GET", "/api/system", "viewer", () =>
    Effect.gen(function* () {
      return json(200, yield* (yield* System).status())
    }),
  ),
  route("POST", "/api/dead-letters/:id/retry", "operator", (request) =>
    Effect.gen(function* () {
      const deadLetter = yield* (yield* System).retryDeadLetter(request.params.id ?? "", actorOf(request))
      return json(200, { dead_letter: deadLetter })
    }),
  ),
]

import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { DeliveryActions } from "../DeliveryActions.ts"
import { Deliveries, fromSearchParams } from "../DeliveryQueries.ts"
import { actorOf, route } from "./Route.ts"

/** Deliveries: the filtered list and its count, one with its attempts, a retry. */
export const deliveryRoutes = [
  route("GET", "/api/deliveries", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, yield* (yield* Deliveries).list(fromSearchParams(request.query)))
    }),
  ),
  route("GET", "/api/deliveries/count", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { count: yield* (yield* Deliveries).count(fromSearchParams(request.query)) })
    }),
  ),
  route("GET", "/api/deliveries/:id", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { delivery: yield* (yield* Deliveries).detail(request.params.id ?? "") })
    }),
  ),
  route("POST", "/api/deliveries/:id/retry", "operator", (request) =>
    Effect.gen(function* () {
      const delivery = yield* (yield* DeliveryActions).retry(request.params.id ?? "", actorOf(request))
      return json(202, { delivery })
    }),
  ),
]

import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { BulkRetries } from "../BulkRetries.ts"
import { DeliveryActions } from "../DeliveryActions.ts"
import { actorOf, objectBody, route } from "./Route.ts"

/** Bulk retries: starting one over a delivery filter, following and cancelling it. */
export const bulkRetryRoutes = [
  route("POST", "/api/bulk-retries", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "bulk_retry")
      const job = yield* (yield* DeliveryActions).createBulkRetry(
        body.filter,
        body.rate_per_second,
        actorOf(request),
      )
      return json(201, { bulk_retry: job })
    }),
  ),
  route("GET", "/api/bulk-retries", "viewer", () =>
    Effect.gen(function* () {
      return json(200, { bulk_retries: yield* (yield* BulkRetries).list() })
    }),
  ),
  route("GET", "/api/bulk-retries/:id", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { bulk_retry: yield* (yield* BulkRetries).get(request.params.id ?? "") })
    }),
  ),
  route("POST", "/api/bulk-retries/:id/cancel", "operator", (request) =>
    Effect.gen(function* () {
      const job = yield* (yield* DeliveryActions).cancelBulkRetry(request.params.id ?? "", actorOf(request))
      return json(200, { bulk_retry: job })
    }),
  ),
]

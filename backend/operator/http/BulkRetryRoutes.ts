import { Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { BulkRetries } from "../../webhooks/bulk/BulkRetries.ts"
import { DeliveryActions } from "../DeliveryActions.ts"
import { encodeCursor } from "./Cursor.ts"
import { checkedQuery, queryReader } from "./Query.ts"
import { actorOf, objectBody, route } from "./Route.ts"

/**
 * Bulk retries: one over a delivery filter, at once or previewed (the snapshot taken, its total shown) and then
 * started; the list newest first (previews left out); following and cancelling one.
 */
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
  route("POST", "/api/bulk-retries/previews", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "bulk_retry")
      const job = yield* (yield* DeliveryActions).previewBulkRetry(body.filter, actorOf(request))
      return json(201, { bulk_retry: job })
    }),
  ),
  route("POST", "/api/bulk-retries/:id/start", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "bulk_retry")
      const job = yield* (yield* DeliveryActions).startBulkRetry(
        request.params.id ?? "",
        body.rate_per_second,
        actorOf(request),
      )
      return json(200, { bulk_retry: job })
    }),
  ),
  route("GET", "/api/bulk-retries", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const page = yield* checkedQuery(reader, { before: reader.cursor(), limit: reader.limit() })
      const jobs = yield* (yield* BulkRetries).list(page)
      return json(200, { bulk_retries: jobs.bulk_retries, next_cursor: encodeCursor(jobs.lastId) })
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

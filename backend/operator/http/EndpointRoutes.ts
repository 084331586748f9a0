import { Clock, Effect } from "effect"
import { json } from "../../platform/Http.ts"
import { hasControlCharacter } from "../../platform/Text.ts"
import { type EndpointStatus, EndpointStatuses } from "../../webhooks/Domain.ts"
import { readCustomHeaders } from "../../webhooks/endpoints/CustomHeaders.ts"
import { EndpointOperations } from "../../webhooks/endpoints/Operations.ts"
import { Health } from "../Health.ts"
import { encodeCursor } from "./Cursor.ts"
import { checkedQuery, queryReader } from "./Query.ts"
import { actorOf, invalid, objectBody, route } from "./Route.ts"

const isEndpointStatus = (value: unknown): value is EndpointStatus =>
  (EndpointStatuses as ReadonlyArray<unknown>).includes(value)

/**
 * Endpoints: the list, one with its health, its status and custom headers (names only; an admin reveals a value),
 * a test delivery.
 */
export const endpointRoutes = [
  route("GET", "/api/endpoints", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const status = reader.text("status", 20)
      if (status !== undefined && !isEndpointStatus(status)) {
        reader.fields.status = `must be one of ${EndpointStatuses.join(", ")}`
      }
      const filter = yield* checkedQuery(reader, {
        owner: reader.text("owner"),
        provider: reader.text("provider"),
        status: status as EndpointStatus | undefined,
        beforeId: reader.cursor(),
        limit: reader.limit(),
      })
      const endpoints = yield* (yield* EndpointOperations).list(filter)
      const now = new Date(yield* Clock.currentTimeMillis)
      const health = yield* (yield* Health).lastHour(
        endpoints.map((e) => e.id),
        now,
      )
      return json(200, {
        endpoints: endpoints.map((e) => ({ ...e, last_hour: health.get(e.id)! })),
        next_cursor: endpoints.length === filter.limit ? encodeCursor(endpoints.at(-1)?.id) : null,
      })
    }),
  ),
  route("GET", "/api/endpoints/:id", "viewer", (request) =>
    Effect.gen(function* () {
      const endpoint = yield* (yield* EndpointOperations).get(request.params.id ?? "")
      const health = yield* (yield* Health).health(endpoint.id, new Date(yield* Clock.currentTimeMillis))
      return json(200, { endpoint, health })
    }),
  ),
  route("PUT", "/api/endpoints/:id/status", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "endpoint")
      const fields: Record<string, string> = {}
      if (!isEndpointStatus(body.status)) fields.status = `must be one of ${EndpointStatuses.join(", ")}`
      const reason = typeof body.reason === "string" ? body.reason.trim() : undefined
      if (body.reason !== undefined && body.reason !== null && typeof body.reason !== "string") {
        fields.reason = "must be a string"
      } else if (reason !== undefined && (reason.length > 500 || hasControlCharacter(reason))) {
        fields.reason = "must be at most 500 characters without control characters"
      } else if (body.status === "disabled" && !reason) {
        fields.reason = "is required to disable an endpoint"
      } else if (body.status === "suspended" && !reason) {
        fields.reason = "is required to suspend an endpoint"
      }
      if (Object.keys(fields).length > 0)
        return yield* invalid("Invalid endpoint status.", "endpoint", fields)
      const endpoint = yield* (yield* EndpointOperations).setStatus(
        request.params.id ?? "",
        body.status as EndpointStatus,
        reason || undefined,
        actorOf(request),
      )
      return json(200, { endpoint })
    }),
  ),
  route("PUT", "/api/endpoints/:id/headers", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "endpoint")
      const endpoint = yield* (yield* EndpointOperations)
        .setHeaders(request.params.id ?? "", readCustomHeaders(body.custom_headers, true), actorOf(request))
        .pipe(
          Effect.catchTag("WebhookCommandRejected", (error) =>
            Effect.fail(invalid("Invalid custom headers.", "endpoint", { custom_headers: error.message })),
          ),
        )
      return json(200, { endpoint })
    }),
  ),
  // A POST, not a GET: it writes the audit row, so it carries the CSRF token and no cache or prefetch repeats it.
  route("POST", "/api/endpoints/:id/headers/:name/reveal", "admin", (request) =>
    Effect.gen(function* () {
      const header = yield* (yield* EndpointOperations).revealHeader(
        request.params.id ?? "",
        request.params.name ?? "",
        actorOf(request),
      )
      return json(200, { header }, { "cache-control": "no-store" })
    }),
  ),
  route("POST", "/api/endpoints/:id/test", "operator", (request) =>
    Effect.gen(function* () {
      const delivery = yield* (yield* EndpointOperations).sendTest(request.params.id ?? "", actorOf(request))
      return json(202, { delivery })
    }),
  ),
]

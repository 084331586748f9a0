import { Effect } from "effect"
import { textProblem } from "../../contract/FieldLimits.ts"
import { json } from "../../platform/Http.ts"
import { MAX_OVERLAP_MS, type SubscriberRef } from "../../webhooks/Domain.ts"
import { EndpointOperations } from "../../webhooks/endpoints/Operations.ts"
import { actorOf, invalid, objectBody, route } from "./Route.ts"

/** The owner or provider a body names (exactly one); each bad field gets its message in `fields`. */
const subscriberOf = (body: Record<string, unknown>, fields: Record<string, string>): SubscriberRef => {
  const owner = typeof body.owner === "string" && body.owner !== "" ? body.owner : undefined
  const provider = typeof body.provider === "string" && body.provider !== "" ? body.provider : undefined
  if ((owner === undefined) === (provider === undefined))
    fields.base = "name exactly one of owner and provider"
  // A name no owner or provider can have is refused before it is looked up (Postgres cannot compare U+0000).
  for (const [field, name] of [
    ["owner", owner],
    ["provider", provider],
  ] as const) {
    const problem = name === undefined ? undefined : textProblem("name", name)
    if (problem !== undefined) fields[field] = problem
  }
  return owner !== undefined ? { kind: "owner", slug: owner } : { kind: "provider", name: provider ?? "" }
}

/** Signing secrets: each subscriber's overview, a rotation with an overlap, and the end of an overlap. */
export const secretRoutes = [
  route("GET", "/api/secrets", "viewer", () =>
    Effect.gen(function* () {
      return json(200, { subscribers: yield* (yield* EndpointOperations).secretsOverview() })
    }),
  ),
  route("POST", "/api/secrets/rotate", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "secret")
      const fields: Record<string, string> = {}
      const ref = subscriberOf(body, fields)
      const hours = body.overlap_hours
      const maxHours = MAX_OVERLAP_MS / 3_600_000
      if (typeof hours !== "number" || !Number.isInteger(hours) || hours < 0 || hours > maxHours) {
        fields.overlap_hours = `must be an integer from 0 to ${maxHours}`
      }
      if (Object.keys(fields).length > 0) return yield* invalid("Invalid rotation.", "secret", fields)
      const rotated = yield* (yield* EndpointOperations)
        .rotate(ref, (hours as number) * 3_600_000, actorOf(request))
        .pipe(
          Effect.catchTag("WebhookCommandRejected", (error) =>
            Effect.fail(invalid("Invalid rotation.", "secret", { base: error.message })),
          ),
        )
      return json(
        201,
        {
          secret: rotated.secret,
          created_at: rotated.created_at,
          previous_expires_at: rotated.previous_expires_at,
        },
        { "cache-control": "no-store" },
      )
    }),
  ),
  route("POST", "/api/secrets/end-overlap", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "secret")
      const fields: Record<string, string> = {}
      const ref = subscriberOf(body, fields)
      if (Object.keys(fields).length > 0) return yield* invalid("Invalid end of overlap.", "secret", fields)
      const ended = yield* (yield* EndpointOperations)
        .endOverlap(ref, actorOf(request))
        .pipe(
          Effect.catchTag("WebhookCommandRejected", (error) =>
            Effect.fail(invalid("Invalid end of overlap.", "secret", { base: error.message })),
          ),
        )
      return json(200, ended)
    }),
  ),
]

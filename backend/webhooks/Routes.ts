import { Effect } from "effect"
import { type HttpRequest, jsonBody } from "../platform/Http.ts"
import type { SubscriberRef } from "./Domain.ts"

/** What the webhook routes share: the endpoints' paths by kind of subscriber, their scope, tag and body. */
export type Kind = SubscriberRef["kind"]

export const ENDPOINTS_PATH: Record<Kind, string> = {
  owner: "/partners/:owner_slug/webhooks/endpoints",
  provider: "/partners/providers/:provider/webhooks/endpoints",
}

export const SCOPE = { scope: "webhooks:manage" } as const
export const TAG = "Webhooks"

export const refOf = (kind: Kind, request: HttpRequest): SubscriberRef =>
  kind === "owner"
    ? { kind, slug: request.params.owner_slug ?? "" }
    : { kind, name: request.params.provider ?? "" }

/** The JSON body; an empty one is no body at all (a 422 naming what is missing), not a JSON error. */
export const body = (request: HttpRequest) =>
  Effect.flatMap(request.text, (text) =>
    text.length === 0 ? Effect.succeed(undefined) : jsonBody(request.headers, text),
  )

import { Effect } from "effect"
import {
  type ApiError,
  type HttpRequest,
  jsonBody,
  NotFound,
  type Route,
  type RouteDoc,
} from "../platform/Http.ts"
import type { EndpointNotFound, OwnerUnknown, ProviderNotProvisioned, SubscriberRef } from "./Domain.ts"

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

/** The 404 of a route under an endpoint, by kind of subscriber. */
export const notFound = (kind: Kind) =>
  kind === "owner"
    ? "Unknown owner, or no such endpoint of this owner"
    : "Provider not provisioned by the service yet, or no such endpoint of this provider"

/** The contract's 404 bodies for a subscriber or endpoint that is not there, which every webhook route may meet. */
export const subscriberNotFound = (error: EndpointNotFound | ProviderNotProvisioned | OwnerUnknown) => {
  switch (error._tag) {
    case "EndpointNotFound":
      return new NotFound({ message: "Endpoint not found." })
    case "ProviderNotProvisioned":
      return new NotFound({
        message: "Provider not found: its webhooks have not been provisioned by the service.",
      })
    case "OwnerUnknown":
      return new NotFound({ message: "Property owner not found." })
  }
}

/** A webhook route as its file writes it: the scope and tag are every webhook route's. */
export interface WebhookRouteSpec<E, R> {
  readonly method: Route["method"]
  readonly path: string
  readonly doc: Omit<RouteDoc, "tag">
  readonly handle: (request: HttpRequest) => Effect.Effect<Response, E | ApiError, R>
}

/**
 * The route maker of a file whose failures `apiErrors` turns into the contract's error bodies: each route gets
 * the `webhooks:manage` scope, the Webhooks tag in the reference, and its failures mapped.
 */
export const webhookRoute =
  <E>(apiErrors: <A, R>(effect: Effect.Effect<A, E | ApiError, R>) => Effect.Effect<A, ApiError, R>) =>
  <R>(spec: WebhookRouteSpec<E, R>): Route<R> => ({
    method: spec.method,
    path: spec.path,
    access: SCOPE,
    doc: { ...spec.doc, tag: TAG },
    handle: (request) => apiErrors(spec.handle(request)),
  })

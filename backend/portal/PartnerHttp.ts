import { Effect } from "effect"
import { type ApiError, json, type Route, Unprocessable } from "../platform/Http.ts"
import { decodeFields, isJsonObject } from "../platform/Validation.ts"
import type { OwnerUnknown, ProviderNotProvisioned } from "../webhooks/Domain.ts"
import { body, type Kind, subscriberNotFound, webhookRoute } from "../webhooks/Routes.ts"
import {
  MAX_EXPIRES_IN,
  MIN_EXPIRES_IN,
  type PortalHolder,
  PortalSessionInvalid,
  PortalSessionRequest,
  PortalSessionResponse,
} from "./Domain.ts"
import { PortalSessions } from "./PortalSessions.ts"

export const PORTAL_SESSIONS_PATH: Record<Kind, string> = {
  owner: "/partners/:owner_slug/webhooks/portal_sessions",
  provider: "/partners/providers/:provider/webhooks/portal_sessions",
}

const INVALID = "Invalid portal session params."

const holderOf = (kind: Kind, params: Readonly<Record<string, string>>): PortalHolder =>
  kind === "owner" ? { kind, slug: params.owner_slug ?? "" } : { kind, name: params.provider ?? "" }

const decodeRequest = decodeFields(PortalSessionRequest)

/** The body as the service takes it: empty is every default; each failing field is named with its first message. */
const readRequest = (parsed: unknown): Effect.Effect<PortalSessionRequest, PortalSessionInvalid> => {
  if (parsed === undefined) return Effect.succeed({})
  if (!isJsonObject(parsed)) {
    return Effect.fail(new PortalSessionInvalid({ fields: { base: "The body must be a JSON object" } }))
  }
  const decoded = decodeRequest(parsed)
  if (!("errors" in decoded)) return Effect.succeed(decoded.value)
  const fields: Record<string, string> = {}
  for (const [path, messages] of Object.entries(decoded.errors)) fields[path.split(".")[0]!] ??= messages[0]!
  return Effect.fail(new PortalSessionInvalid({ fields }))
}

type PortalError = PortalSessionInvalid | OwnerUnknown | ProviderNotProvisioned

/** The one place where the portal sessions' failures become the contract's error bodies. */
const apiErrors = <A, R>(
  effect: Effect.Effect<A, PortalError | ApiError, R>,
): Effect.Effect<A, ApiError, R> =>
  Effect.mapError(effect, (error): ApiError => {
    switch (error._tag) {
      case "PortalSessionInvalid":
        return new Unprocessable({ message: INVALID, resource: "portal_session", fields: error.fields })
      case "OwnerUnknown":
      case "ProviderNotProvisioned":
        return subscriberNotFound(error)
      default:
        return error
    }
  })

const route = webhookRoute(apiErrors)

const notFound = (kind: Kind) =>
  kind === "owner" ? "Unknown owner" : "Provider not provisioned by the service yet"

const sessionRoutes = (kind: Kind): ReadonlyArray<Route<PortalSessions>> => {
  const path = PORTAL_SESSIONS_PATH[kind]
  const whose = kind === "owner" ? "the owner's" : "the provider's"
  return [
    route({
      method: "POST",
      path,
      doc: {
        summary: `Open a webhooks portal session for ${kind === "owner" ? "an owner" : "a provider"}`,
        description:
          `A one-time link to the webhooks portal, where ${whose} developers see and fix ${whose} webhook ` +
          "endpoints. Hand the link to the browser at once (a redirect, or an iframe's `src`): its first opening " +
          "exchanges it for a session cookie, any later one shows a page saying the link is no longer valid. " +
          `Body, all optional: \`expires_in\` (seconds, ${MIN_EXPIRES_IN} to ${MAX_EXPIRES_IN}), \`read_only\`, ` +
          (kind === "owner"
            ? "`parent_origin` (the origin of the page that frames the portal, one of the owner's `embedded_frame_ancestors`)."
            : "and no `parent_origin`: a provider has no `embedded_frame_ancestors`, so its portal is never framed."),
        body: PortalSessionRequest,
        responses: [
          { status: 201, description: "The one-time link", schema: PortalSessionResponse },
          { status: 404, description: notFound(kind) },
          {
            status: 422,
            description: `\`${INVALID}\` with a message per field, e.g. 'parent_origin must be one of the owner's embedded_frame_ancestors'`,
          },
        ],
      },
      handle: (request) =>
        Effect.gen(function* () {
          const input = yield* readRequest(yield* body(request))
          const made = yield* PortalSessions.use((sessions) =>
            sessions.create(holderOf(kind, request.params), input),
          )
          return json(201, { url: made.url, expires_at: made.expiresAt.toISOString() })
        }),
    }),
    route({
      method: "DELETE",
      path,
      doc: {
        summary: `End every webhooks portal session of ${kind === "owner" ? "an owner" : "a provider"}`,
        description:
          "Ends at once every portal session of " +
          (kind === "owner" ? "the owner" : "the provider") +
          " and every link not opened yet: the portal answers 401 to them, and the links show the page saying " +
          "they are no longer valid.",
        responses: [
          { status: 204, description: "Ended (no body)" },
          { status: 404, description: notFound(kind) },
        ],
      },
      handle: (request) =>
        PortalSessions.use((sessions) => sessions.endAll(holderOf(kind, request.params))).pipe(
          Effect.as(new Response(null, { status: 204 })),
        ),
    }),
  ]
}

/** The portal sessions' routes of the partner gateway, on the owner and provider paths. */
export const portalSessionRoutes: ReadonlyArray<Route<PortalSessions>> = [
  ...sessionRoutes("owner"),
  ...sessionRoutes("provider"),
]

import { Effect, Schema } from "effect"
import { FIELD_LIMITS, textProblem } from "../contract/FieldLimits.ts"
import { unavailableIn } from "../platform/Unavailable.ts"
import {
  type BadRequest,
  type Caller,
  decodeUtf8,
  Forbidden,
  type Guard,
  json,
  jsonBody,
  LONE_SURROGATE_MESSAGE,
  NOT_UTF8_MESSAGE,
  NotFound,
  parseFormText,
  type Route,
  type UnsupportedMediaType,
} from "../platform/Http.ts"
import { Auth } from "./Auth.ts"
import {
  type Gateway,
  InvalidTokenRequest,
  JsonWebKeySet,
  TokenError,
  TokenRequest,
  TokenResponse,
} from "./Domain.ts"

const decodeTokenRequest = Schema.decodeUnknownEffect(TokenRequest)

/** RFC 6749 §5.2's refusal of a body that is not a token request, saying what the body was. */
const unreadableBody = (error: BadRequest) =>
  new InvalidTokenRequest({
    error: "invalid_request",
    description:
      error.message === LONE_SURROGATE_MESSAGE || error.message === NOT_UTF8_MESSAGE
        ? error.message
        : "The body is neither JSON nor a form.",
  })

/** RFC 6749 §5.1: token responses must not be cached. */
const noStore = { "cache-control": "no-store", pragma: "no-cache" }

const tokenError = (
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {},
) => json(status, { error, error_description: description }, { ...noStore, ...headers })

/**
 * The token request's fields, from a form-encoded body (what OAuth libraries send) or a JSON one; a body under
 * any other type is a 415, as on every JSON route.
 */
const tokenFields = (
  headers: Headers,
  bytes: Uint8Array,
): Effect.Effect<unknown, InvalidTokenRequest | UnsupportedMediaType> =>
  decodeUtf8(bytes).pipe(
    Effect.flatMap((text): Effect.Effect<unknown, BadRequest | UnsupportedMediaType> =>
      headers.get("content-type")?.toLowerCase().startsWith("application/x-www-form-urlencoded")
        ? Effect.map(parseFormText(text), (form) => Object.fromEntries(form))
        : jsonBody(headers, text),
    ),
    Effect.mapError((error) => (error._tag === "BadRequest" ? unreadableBody(error) : error)),
  )

/**
 * RFC 6749 §2.3.1: a client may send its credentials as HTTP Basic (each part form-encoded) instead of in the
 * body; OAuth libraries often do by default. Body fields win when both are present.
 */
const withBasicCredentials = (fields: unknown, authorization: string | null) =>
  Effect.try({
    try: (): unknown => {
      const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization?.trim() ?? "")?.[1]
      if (basic === undefined || typeof fields !== "object" || fields === null) return fields
      const decoded = Buffer.from(basic, "base64").toString("utf8")
      const colon = decoded.indexOf(":")
      if (colon < 0) return fields
      const formDecode = (part: string) => decodeURIComponent(part.replace(/\+/g, " "))
      return {
        client_id: formDecode(decoded.slice(0, colon)),
        client_secret: formDecode(decoded.slice(colon + 1)),
        ...fields,
      }
    },
    // A malformed percent-encoding is bad input, not a defect.
    catch: () =>
      new InvalidTokenRequest({
        error: "invalid_request",
        description: "The Basic credentials are not form-encoded.",
      }),
  })

/**
 * The audience from the token URL's query when the body has none: browser OAuth clients (the docs page's
 * Authorize dialog) can add query parameters to the token request but not body fields.
 */
const withQueryAudience = (fields: unknown, query: URLSearchParams): unknown => {
  const audience = query.get("audience")
  if (audience === null || typeof fields !== "object" || fields === null || "audience" in fields)
    return fields
  return { ...fields, audience }
}

/**
 * A `client_id` that no client can have (a control character, or longer than any id) is a malformed request,
 * refused before it is looked up or counted: Postgres could not even compare U+0000.
 */
const withPlausibleClientId = (fields: unknown) =>
  typeof fields === "object" &&
  fields !== null &&
  typeof (fields as { client_id?: unknown }).client_id === "string" &&
  textProblem("client_id", (fields as { client_id: string }).client_id) !== undefined
    ? Effect.fail(
        new InvalidTokenRequest({
          error: "invalid_request",
          description: `client_id must be at most ${FIELD_LIMITS.client_id} characters without control characters.`,
        }),
      )
    : Effect.succeed(fields)

const tokenRoute = (gateway: Gateway): Route<Auth> => ({
  method: "POST",
  path: "/token",
  access: "public",
  doc: {
    summary: "Obtain an access token (OAuth 2.0 client credentials)",
    description:
      "Send `grant_type=client_credentials`, the client's id and secret and this gateway's audience, as JSON or " +
      "as a form (the id and secret may instead come as HTTP Basic credentials). Cache the token and refresh " +
      "it before `expires_in` runs out.",
    tag: "Authentication",
    body: TokenRequest,
    responses: [
      { status: 200, description: "A token", schema: TokenResponse },
      {
        status: 400,
        description: "A malformed request, another grant type, or a scope outside the grant",
        schema: TokenError,
      },
      {
        status: 401,
        description: "Credentials rejected (`access_denied` / `Unauthorized`)",
        schema: TokenError,
      },
      {
        status: 415,
        description: "A body sent as neither a form nor JSON (`Content-Type`)",
        schema: TokenError,
      },
      {
        status: 429,
        description:
          "Too many failed attempts for this client id from this address, or too many attempts in progress " +
          "from it at once (each says which); see Retry-After",
        schema: TokenError,
      },
    ],
  },
  // Every answer of the token endpoint is OAuth's shape (RFC 6749 §5.2), refusals of its address and body included.
  answerRefusedAddress: (refusal) => Effect.succeed(tokenError(400, "invalid_request", refusal.message)),
  handle: (request) =>
    Effect.gen(function* () {
      const auth = yield* Auth
      const bytes = yield* request.bytes
      const fields = yield* tokenFields(request.headers, bytes)
      const withCredentials = yield* withBasicCredentials(fields, request.headers.get("authorization")).pipe(
        Effect.flatMap(withPlausibleClientId),
      )
      const tokenRequest = yield* decodeTokenRequest(withQueryAudience(withCredentials, request.query)).pipe(
        Effect.mapError(
          () =>
            new InvalidTokenRequest({
              error: "invalid_request",
              description: "grant_type, client_id, client_secret and audience are required strings.",
            }),
        ),
      )
      const token = yield* auth.issueToken(gateway, tokenRequest, request.remoteAddress)
      return json(200, token, noStore)
    }).pipe(
      Effect.catchTags({
        InvalidClient: () => Effect.succeed(tokenError(401, "access_denied", "Unauthorized")),
        InvalidTokenRequest: (error) => Effect.succeed(tokenError(400, error.error, error.description)),
        TokenRequestsBlocked: (error) =>
          Effect.succeed(
            tokenError(
              429,
              "slow_down",
              error.reason === "failures"
                ? "Too many failed attempts for this client id from your address; retry later."
                : "Too many attempts in progress from your address; retry later.",
              { "retry-after": String(error.retryAfterSeconds) },
            ),
          ),
        BadRequest: () => Effect.succeed(tokenError(400, "invalid_request", "The body could not be read.")),
        UnsupportedMediaType: () =>
          Effect.succeed(
            tokenError(
              415,
              "invalid_request",
              "The body must be a form (application/x-www-form-urlencoded) or JSON (application/json).",
            ),
          ),
        // The rest of the body is left unread, so the connection cannot carry another request.
        PayloadTooLarge: (error) =>
          Effect.succeed(
            tokenError(
              413,
              "invalid_request",
              `The body is larger than the limit of ${error.limitBytes} bytes.`,
              { connection: "close" },
            ),
          ),
      }),
      // Postgres or NATS not answering: OAuth's `temporarily_unavailable`, with the gateway's Retry-After.
      Effect.catchCause((cause) => {
        const unavailable = unavailableIn(cause)
        return unavailable === undefined
          ? Effect.failCause(cause)
          : Effect.logWarning("token request failed: dependency unavailable").pipe(
              Effect.annotateLogs({ dependency: unavailable.dependency, reason: unavailable.reason }),
              Effect.as(
                tokenError(
                  503,
                  "temporarily_unavailable",
                  "The service is briefly unavailable. Retry shortly.",
                  {
                    "retry-after": "2",
                  },
                ),
              ),
            )
      }),
    ),
})

const jwksRoute: Route<Auth> = {
  method: "GET",
  path: "/.well-known/jwks.json",
  access: "public",
  doc: {
    summary: "The public keys that verify access tokens",
    tag: "Authentication",
    responses: [{ status: 200, description: "JSON Web Key Set", schema: JsonWebKeySet }],
  },
  handle: () =>
    Auth.use((auth) => auth.jwks).pipe(
      Effect.map((jwks) => json(200, jwks, { "cache-control": "public, max-age=300" })),
    ),
}

/** The routes every gateway serves for authentication. */
export const authRoutes = (gateway: Gateway): ReadonlyArray<Route<Auth>> => [tokenRoute(gateway), jwksRoute]

/**
 * The gateway check, in the order the contract implies: a valid token minted for this gateway (401), the
 * route's scope (403), the owner in the path exists (404) and is granted (403), the provider in the path is
 * the client's (403).
 */
export const authGuard = (gateway: Gateway): Guard<Auth> => ({
  authenticate: (route, request) =>
    Effect.gen(function* () {
      const auth = yield* Auth
      const ownerSlug =
        route.access !== "public" && route.access.ownerFromQuery
          ? request.query.get("owner_slug") || undefined
          : request.params.owner_slug
      const caller = yield* auth.authenticate(gateway, request.headers.get("authorization"), ownerSlug)
      if (route.access !== "public" && !caller.scopes.has(route.access.scope)) return yield* new Forbidden()
      if (caller.ownerAccess === "unknown")
        return yield* new NotFound({ message: "Property owner not found." })
      if (caller.ownerAccess === "not granted") return yield* new Forbidden()
      const provider = request.params.provider
      if (provider !== undefined && caller.provider !== provider) return yield* new Forbidden()
      return { clientId: caller.clientId, scopes: caller.scopes, source: caller.source } satisfies Caller
    }),
})

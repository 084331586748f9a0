import { Schema } from "effect"

export const Gateway = Schema.Literals(["partner", "ingest"])
export type Gateway = typeof Gateway.Type

/** The token request of the OAuth 2.0 client-credentials grant, as JSON or form fields. */
export const TokenRequest = Schema.Struct({
  grant_type: Schema.String.annotate({ description: "Always `client_credentials`." }),
  client_id: Schema.String,
  client_secret: Schema.String,
  audience: Schema.String.annotate({ description: "The audience issued for this gateway." }),
  scope: Schema.optional(
    Schema.String.annotate({
      description: "Space-separated subset of the client's scopes; omit it to receive every granted scope.",
    }),
  ),
}).annotate({ identifier: "TokenRequest" })
export type TokenRequest = typeof TokenRequest.Type

export const TokenResponse = Schema.Struct({
  access_token: Schema.String.annotate({ description: "A JWT; send it as `Authorization: Bearer <token>`." }),
  token_type: Schema.Literal("Bearer"),
  scope: Schema.String.annotate({ description: "Space-separated scopes the token carries." }),
  expires_in: Schema.Int.annotate({ description: "Seconds until the token expires; authoritative." }),
}).annotate({ identifier: "TokenResponse" })

export const TokenError = Schema.Struct({
  error: Schema.String,
  error_description: Schema.String,
}).annotate({ identifier: "TokenError" })

/** JWKS: the public keys that verify access tokens. */
export const JsonWebKeySet = Schema.Struct({
  keys: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)),
}).annotate({ identifier: "JsonWebKeySet" })

export interface Client {
  readonly id: string
  readonly gateway: Gateway
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  /** Slugs of the owners this client may act for. */
  readonly owners: ReadonlyArray<string>
  readonly provider: string | null
  readonly source: string | null
  readonly createdAt: Date
  readonly revokedAt: Date | null
}

/** Credentials rejected at `/token`: always the same 401 body, naming nothing. */
export class InvalidClient extends Schema.TaggedError<InvalidClient>()("InvalidClient", {}) {}

/** A token request that is not well formed, or asks for a scope outside the grant (RFC 6749 §5.2). */
export class InvalidTokenRequest extends Schema.TaggedError<InvalidTokenRequest>()("InvalidTokenRequest", {
  error: Schema.Literals(["invalid_request", "unsupported_grant_type", "invalid_scope"]),
  description: Schema.String,
}) {}

/** A token request refused before its secret is checked: too many failures, or too many requests at once. */
export class TokenRequestsBlocked extends Schema.TaggedError<TokenRequestsBlocked>()("TokenRequestsBlocked", {
  retryAfterSeconds: Schema.Number,
  /** `failures`: the source failed too often for the client id; `in progress`: it has too many requests at once. */
  reason: Schema.Literals(["failures", "in progress"]),
}) {}

/** An operator command naming something that does not exist or is not allowed. */
export class ClientCommandRejected extends Schema.TaggedError<ClientCommandRejected>()(
  "ClientCommandRejected",
  {
    message: Schema.String,
  },
) {}

import { Schema } from "effect"

/** Whose webhooks a portal session shows: one owner, or one provider. */
export type PortalHolder =
  { readonly kind: "owner"; readonly slug: string } | { readonly kind: "provider"; readonly name: string }

export const MIN_EXPIRES_IN = 300
export const MAX_EXPIRES_IN = 86_400
export const DEFAULT_EXPIRES_IN = 3600

const ExpiresIn = Schema.Int.check(
  Schema.isBetween(
    { minimum: MIN_EXPIRES_IN, maximum: MAX_EXPIRES_IN },
    { message: `must be a whole number of seconds from ${MIN_EXPIRES_IN} to ${MAX_EXPIRES_IN}` },
  ),
).annotate({
  description: `Seconds the link and the session it opens last, from ${MIN_EXPIRES_IN} to ${MAX_EXPIRES_IN}; default ${DEFAULT_EXPIRES_IN}.`,
  message: `must be a whole number of seconds from ${MIN_EXPIRES_IN} to ${MAX_EXPIRES_IN}`,
})

/**
 * Exactly `scheme://host[:port]` over HTTPS, as a `frame-ancestors` source names one origin: a wildcard, path,
 * query or user info would widen what the owner allowed. It must also be one of the owner's origins.
 */
const ParentOrigin = Schema.String.check(
  Schema.makeFilter((value: string) => {
    const parsed = value.length <= 2048 && URL.canParse(value) ? new URL(value) : undefined
    return parsed?.protocol === "https:" && parsed.origin === value && !value.includes("*")
      ? undefined
      : "must be an HTTPS origin such as https://pms.example.com (scheme, host and port only)"
  }),
).annotate({
  description:
    "The HTTPS origin that will frame the portal, exactly `https://host[:port]`; one of the owner's " +
    "`embedded_frame_ancestors`. Omitted, no site may frame it. Refused on a provider's session.",
  message: "must be an HTTPS origin such as https://pms.example.com (scheme, host and port only)",
})

/** The body of `POST .../webhooks/portal_sessions`; every field may be omitted, unknown ones are ignored. */
export const PortalSessionRequest = Schema.Struct({
  expires_in: Schema.optionalKey(ExpiresIn),
  read_only: Schema.optionalKey(
    Schema.Boolean.annotate({
      description: "Whether the portal only shows, changing nothing; default false.",
      message: "must be true or false",
    }),
  ),
  parent_origin: Schema.optionalKey(ParentOrigin),
}).annotate({ identifier: "PortalSessionRequest" })
export type PortalSessionRequest = typeof PortalSessionRequest.Type

export const PortalSessionResponse = Schema.Struct({
  url: Schema.String.annotate({
    description:
      "The one-time link that opens the portal: `<PORTAL_BASE_URL>/portal/start?code=...`. Open it once.",
  }),
  expires_at: Schema.String.annotate({ description: "When the link and its session end (ISO 8601)." }),
}).annotate({ identifier: "PortalSession" })

/** A portal session the request cannot open; `fields` says which field, in the contract's words. */
export class PortalSessionInvalid extends Schema.TaggedError<PortalSessionInvalid>()("PortalSessionInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

/** The session's holder, as the portal shows it. */
export type SessionHolder =
  | { readonly owner: { readonly slug: string; readonly name: string } }
  | { readonly provider: { readonly name: string } }

/** The session's holder by the owner's or the provider's id: what its reads are scoped by. */
export type HolderId = { readonly ownerId: string } | { readonly providerId: string }

/** A live portal session, as its cookie opens it. */
export interface PortalSession {
  /** The session's row id: the audit log's actor is `portal:<id>`. */
  readonly id: string
  readonly holder: SessionHolder
  readonly holderId: HolderId
  readonly readOnly: boolean
  readonly parentOrigin: string | null
  readonly expiresAt: Date
  /** How the portal shows an owner (its brand name or else its name, logo, accent colour); null for a provider. */
  readonly brand: {
    readonly name: string
    readonly logo_url: string | null
    readonly accent_color: string | null
  } | null
}

/** A code exchanged for a session: the cookie's token (only its hash is stored) and the session. */
export interface ExchangedCode {
  readonly token: string
  readonly session: PortalSession
}

/** Filter, cursor or limit values of a portal list that mean nothing: each field with its message (a 422). */
export class PortalFilterInvalid extends Schema.TaggedError<PortalFilterInvalid>()("PortalFilterInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

/** A delivery the session may not see: unknown, or another holder's, alike (a 404). */
export class PortalDeliveryNotFound extends Schema.TaggedError<PortalDeliveryNotFound>()(
  "PortalDeliveryNotFound",
  {},
) {}

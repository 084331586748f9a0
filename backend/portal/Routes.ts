import { createHash, timingSafeEqual } from "node:crypto"
import { Effect, Schema } from "effect"
import { AuditChannel, AuditDetails } from "../audit/Audit.ts"
import { type HttpRequest, json, type Route } from "../platform/Http.ts"
import { isJsonObject } from "../platform/Validation.ts"
import { CSRF_HEADER, type PortalError } from "./Api.ts"
import { PortalConfig } from "./Config.ts"
import { portalToken } from "./Cookie.ts"
import type { PortalSession } from "./Domain.ts"
import { PortalSessions } from "./PortalSessions.ts"
import { portalHeaders } from "./SecurityHeaders.ts"

/*
 * The frame of every `/portal/api` route: the cookie's session (401 without one), the portal's headers on every
 * answer, and for a change the session's right to change (403 read only, 403 without its CSRF token), the audit
 * channel `portal` and the session's owner or provider in every audit entry's details. A route's handler gets
 * the session and answers with a status and a body, or fails with a `PortalRefusal` in the contract's error
 * shape.
 */

export const JSON_TYPE = "application/json"

export const headersFor = (
  parentOrigin: string | null | undefined,
  contentType: string,
  logoUrl?: string | null,
) =>
  Effect.map(Effect.service(PortalConfig), (config) =>
    portalHeaders(parentOrigin, { https: config.baseUrl.startsWith("https:"), contentType, logoUrl }),
  )

/** The headers of a session's answers: framed by its parent origin, showing its owner's logo. */
export const sessionHeaders = (session: PortalSession, contentType: string) =>
  headersFor(session.parentOrigin, contentType, session.brand?.logo_url)

/** The session's CSRF token: derived from its cookie's token, which the page's script cannot read. */
export const csrfToken = (cookieToken: string) =>
  createHash("sha256").update(`portal-csrf:${cookieToken}`).digest("base64url")

const sameText = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

/** Who made a portal change, as the audit log names it: the portal session. */
export const portalActor = (session: PortalSession) => `portal:${session.id}`

/** What the audit entry of a portal change adds: whose portal it was. */
export const holderDetails = (session: PortalSession) =>
  "owner" in session.holder
    ? { owner: session.holder.owner.slug }
    : { provider: session.holder.provider.name }

/** A portal answer other than 2xx, in the contract's shape. */
export class PortalRefusal extends Schema.TaggedError<PortalRefusal>()("PortalRefusal", {
  status: Schema.Int,
  error: Schema.String,
  errors: Schema.optionalKey(Schema.Record(Schema.String, Schema.Array(Schema.String))),
}) {}

/** A 422 naming each wrong field with its message. */
export const invalidFields = (error: string, fields: Readonly<Record<string, string>>) =>
  new PortalRefusal({
    status: 422,
    error,
    errors: Object.fromEntries(Object.entries(fields).map(([field, message]) => [field, [message]])),
  })

export const notFound = (what: string) => new PortalRefusal({ status: 404, error: `${what} not found.` })

export const READ_ONLY = "This portal session is read only: it changes nothing."
export const NO_CSRF = `A change must carry the session's csrf_token in ${CSRF_HEADER}.`

const refusalBody = (refusal: PortalRefusal): PortalError => ({
  status_code: refusal.status,
  error: refusal.error,
  ...(refusal.errors === undefined ? {} : { errors: refusal.errors }),
})

export const noSession = () =>
  Effect.map(headersFor(null, JSON_TYPE), (headers) =>
    json(401, { error: "No portal session: open the portal again from the partner's app." }, headers),
  )

/** What a handler answers: a status and a body (JSON), or a whole response (no body, a stream). */
export type PortalAnswer = { readonly status: number; readonly body: unknown } | Response

export interface PortalRouteSpec<R> {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  readonly path: string
  /** Whether it changes anything: refused to a read-only session and without the CSRF token, audited `portal`. */
  readonly change: boolean
  readonly handle: (
    session: PortalSession,
    request: HttpRequest,
  ) => Effect.Effect<PortalAnswer, PortalRefusal, R>
}

export const portalRoute = <R>(spec: PortalRouteSpec<R>): Route<R | PortalSessions | PortalConfig> => ({
  method: spec.method,
  path: spec.path,
  access: "public",
  handle: (request) =>
    Effect.gen(function* () {
      const token = portalToken(request.headers)
      const session = yield* PortalSessions.use((sessions) => sessions.current(token))
      if (session === undefined || token === undefined) return yield* noSession()
      const headers = yield* sessionHeaders(session, JSON_TYPE)
      const refuse = (refusal: PortalRefusal) => json(refusal.status, refusalBody(refusal), headers)
      if (spec.change) {
        if (session.readOnly) return refuse(new PortalRefusal({ status: 403, error: READ_ONLY }))
        const sent = request.headers.get(CSRF_HEADER) ?? ""
        if (!sameText(sent, csrfToken(token)))
          return refuse(new PortalRefusal({ status: 403, error: NO_CSRF }))
      }
      return yield* spec.handle(session, request).pipe(
        Effect.map((answer) => {
          if (answer instanceof Response) {
            for (const [name, value] of Object.entries(headers)) {
              if (!answer.headers.has(name)) answer.headers.set(name, value)
            }
            return answer
          }
          return json(answer.status, answer.body, headers)
        }),
        Effect.catchTag("PortalRefusal", (refusal) => Effect.succeed(refuse(refusal))),
        Effect.provideService(AuditChannel, "portal"),
        Effect.provideService(AuditDetails, holderDetails(session)),
      )
    }),
})

/** A JSON answer encoded with its schema. */
export const encoded =
  <S extends Schema.Top & Schema.Codec<unknown, unknown, never, never>>(schema: S, status = 200) =>
  (answer: S["Type"]): PortalAnswer => ({ status, body: Schema.encodeSync(schema)(answer) })

export const NOT_JSON = "The body must be JSON."
export const NOT_AN_OBJECT = "The body must be a JSON object."

/**
 * The body of a change as a JSON object: bad JSON, bytes that are not UTF-8 or anything but an object is a 422
 * under `base` with `error` the route's own, never a 500; unknown keys are left for the reader to ignore.
 */
export const objectBody = (request: HttpRequest, error: string) =>
  Effect.gen(function* () {
    const text = yield* request.text.pipe(
      Effect.catchTags({
        PayloadTooLarge: (tooLarge) =>
          Effect.fail(
            new PortalRefusal({
              status: 413,
              error: `The body is larger than ${tooLarge.limitBytes} bytes.`,
            }),
          ),
        BadRequest: () => Effect.fail(invalidFields(error, { base: NOT_JSON })),
      }),
    )
    let parsed: unknown
    try {
      parsed = JSON.parse(text) as unknown
    } catch {
      return yield* invalidFields(error, { base: NOT_JSON })
    }
    if (!isJsonObject(parsed)) return yield* invalidFields(error, { base: NOT_AN_OBJECT })
    return parsed
  })

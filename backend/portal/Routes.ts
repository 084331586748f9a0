import { createHash, timingSafeEqual } from "node:crypto"
import { Effect, Schema } from "effect"
import { AuditChannel, AuditDetails } from "../audit/Audit.ts"
import { type HttpRequest, json, type Route } from "../platform/Http.ts"
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

export const headersFor = (parentOrigin: string | null | undefined, contentType: string) =>
  Effect.map(Effect.service(PortalConfig), (config) =>
    portalHeaders(parentOrigin, { https: config.baseUrl.startsWith("https:"), contentType }),
  )

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
      const headers = yield* headersFor(session.parentOrigin, JSON_TYPE)
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

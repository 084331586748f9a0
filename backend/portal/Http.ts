import { Clock, Effect, Schema } from "effect"
import { type HttpRequest, json, type Route } from "../platform/Http.ts"
import { fromSearchParams } from "../webhooks/endpoints/DeliveryFilters.ts"
import { DeliveryDetailAnswer, DeliveryPage, EndpointsAnswer, EventsAnswer, type PortalError } from "./Api.ts"
import { PortalConfig } from "./Config.ts"
import type { PortalDeliveryNotFound, PortalFilterInvalid, PortalSession } from "./Domain.ts"
import { portalCookie, portalToken } from "./Cookie.ts"
import { linkNoLongerValidPage, noSessionPage, portalPlaceholderPage } from "./Pages.ts"
import { PortalReads } from "./PortalReads.ts"
import { PortalSessions } from "./PortalSessions.ts"
import { portalHeaders } from "./SecurityHeaders.ts"

/** A link that opens no session: the same page and status whatever the reason, so it tells nothing of why. */
export const LINK_GONE_STATUS = 410

const HTML = "text/html; charset=utf-8"
const JSON_TYPE = "application/json"

const headersFor = (parentOrigin: string | null | undefined, contentType: string) =>
  Effect.map(Effect.service(PortalConfig), (config) =>
    portalHeaders(parentOrigin, { https: config.baseUrl.startsWith("https:"), contentType }),
  )

const html = (status: number, body: string, parentOrigin?: string | null) =>
  Effect.map(headersFor(parentOrigin, HTML), (headers) => new Response(body, { status, headers }))

const linkGone = () => html(LINK_GONE_STATUS, linkNoLongerValidPage())

const currentSession = (headers: Headers) =>
  PortalSessions.use((sessions) => sessions.current(portalToken(headers)))

/** What `/portal/api/session` answers: whose webhooks, whether read only, and until when. */
const sessionBody = (session: PortalSession) => ({
  ...session.holder,
  read_only: session.readOnly,
  expires_at: session.expiresAt.toISOString(),
})

const startRoute: Route<PortalSessions | PortalConfig> = {
  method: "GET",
  path: "/portal/start",
  access: "public",
  answerRefusedAddress: linkGone,
  handle: (request) =>
    Effect.gen(function* () {
      const exchanged = yield* PortalSessions.use((sessions) =>
        sessions.exchange(request.query.get("code") ?? undefined),
      )
      if (exchanged === undefined) return yield* linkGone()
      const secondsLeft = Math.floor(
        (exchanged.session.expiresAt.getTime() - (yield* Clock.currentTimeMillis)) / 1000,
      )
      const headers = yield* headersFor(exchanged.session.parentOrigin, HTML)
      // The code leaves the address bar (and any Referer) with this redirect.
      return new Response(null, {
        status: 303,
        headers: {
          ...headers,
          location: "/portal/",
          "set-cookie": portalCookie(exchanged.token, Math.max(0, secondsLeft)),
        },
      })
    }),
}

const noSession = () =>
  Effect.map(headersFor(null, JSON_TYPE), (headers) =>
    json(401, { error: "No portal session: open the portal again from the partner's app." }, headers),
  )

const sessionRoute: Route<PortalSessions | PortalConfig> = {
  method: "GET",
  path: "/portal/api/session",
  access: "public",
  handle: (request) =>
    Effect.gen(function* () {
      const session = yield* currentSession(request.headers)
      if (session === undefined) return yield* noSession()
      return json(200, sessionBody(session), yield* headersFor(session.parentOrigin, JSON_TYPE))
    }),
}

type ReadError = PortalFilterInvalid | PortalDeliveryNotFound

/** The read routes' failures as the contract's error bodies: 422 naming each field, 404 alike for any delivery. */
const readError = (error: ReadError): { readonly status: number; readonly body: PortalError } =>
  error._tag === "PortalFilterInvalid"
    ? {
        status: 422,
        body: {
          status_code: 422,
          error: "Invalid delivery filters.",
          errors: Object.fromEntries(
            Object.entries(error.fields).map(([field, message]) => [field, [message]]),
          ),
        },
      }
    : { status: 404, body: { status_code: 404, error: "Delivery not found." } }

/**
 * A JSON read of the session's holder: 401 without a live session, else the read's answer encoded with its
 * schema, or its failure in the contract's shape; every answer with the portal's headers.
 */
const readRoute = <S extends Schema.Top & Schema.Codec<unknown, unknown, never, never>>(
  path: string,
  schema: S,
  read: (session: PortalSession, request: HttpRequest) => Effect.Effect<S["Type"], ReadError, PortalReads>,
): Route<PortalSessions | PortalConfig | PortalReads> => {
  const encode = Schema.encodeSync(schema)
  return {
    method: "GET",
    path,
    access: "public",
    handle: (request) =>
      Effect.gen(function* () {
        const session = yield* currentSession(request.headers)
        if (session === undefined) return yield* noSession()
        const headers = yield* headersFor(session.parentOrigin, JSON_TYPE)
        return yield* read(session, request).pipe(
          Effect.map((answer) => json(200, encode(answer), headers)),
          Effect.catch((error: ReadError) =>
            Effect.sync(() => {
              const { status, body } = readError(error)
              return json(status, body, headers)
            }),
          ),
        )
      }),
  }
}

const readRoutes = [
  readRoute("/portal/api/endpoints", EndpointsAnswer, (session) =>
    PortalReads.use((reads) => reads.endpoints(session)),
  ),
  readRoute("/portal/api/deliveries", DeliveryPage, (session, request) =>
    PortalReads.use((reads) => reads.deliveries(session, fromSearchParams(request.query))),
  ),
  readRoute("/portal/api/deliveries/:id", DeliveryDetailAnswer, (session, request) =>
    PortalReads.use((reads) => reads.delivery(session, request.params.id ?? "")),
  ),
  readRoute("/portal/api/events", EventsAnswer, (session) =>
    PortalReads.use((reads) => Effect.succeed(reads.events(session))),
  ),
]

const homeRoute: Route<PortalSessions | PortalConfig> = {
  method: "GET",
  path: "/portal/",
  access: "public",
  handle: (request) =>
    Effect.gen(function* () {
      const session = yield* currentSession(request.headers)
      return session === undefined
        ? yield* html(401, noSessionPage())
        : yield* html(200, portalPlaceholderPage(session), session.parentOrigin)
    }),
}

/** Other portal paths: a 404 with the portal's headers, so nothing under /portal is framed or cached. */
const unknownRoute: Route<PortalSessions | PortalConfig> = {
  method: "GET",
  path: "/portal/**",
  access: "public",
  handle: () =>
    Effect.map(headersFor(null, JSON_TYPE), (headers) =>
      json(404, { status_code: 404, error: "Not found." }, headers),
    ),
}

/** The portal gateway's routes: the one-time link's exchange, the session, its holder's reads and the page. */
export const portalRoutes: ReadonlyArray<Route<PortalSessions | PortalConfig | PortalReads>> = [
  startRoute,
  sessionRoute,
  ...readRoutes,
  homeRoute,
  unknownRoute,
]

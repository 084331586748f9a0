import { Clock, Effect, Exit } from "effect"
import type { AddressThrottled } from "../platform/AddressThrottle.ts"
import type { Route } from "../platform/Http.ts"
import { fromSearchParams } from "../webhooks/endpoints/DeliveryFilters.ts"
import {
  DeliveryDetailAnswer,
  DeliveryPage,
  EndpointHealthAnswer,
  EndpointsAnswer,
  EventsAnswer,
  SessionAnswer,
  type SigningHeaders,
} from "./Api.ts"
import { changeRoutes } from "./ChangeRoutes.ts"
import { PortalConfig } from "./Config.ts"
import type { PortalDeliveryNotFound, PortalFilterInvalid, PortalSession } from "./Domain.ts"
import { portalCookie, portalToken } from "./Cookie.ts"
import { linkCannotOpenNowPage, linkNoLongerValidPage } from "./Pages.ts"
import type { PortalChanges } from "./PortalChanges.ts"
import { PortalReads } from "./PortalReads.ts"
import { PortalSessions } from "./PortalSessions.ts"
import type { PortalRecoveries } from "./Recoveries.ts"
import { liveRoutes } from "./LiveRoutes.ts"
import type { PortalLive } from "./PortalLive.ts"
import { recoverRoutes } from "./RecoverRoutes.ts"
import {
  csrfToken,
  encoded,
  headersFor,
  invalidFields,
  notFound,
  portalRoute,
  sessionHeaders,
} from "./Routes.ts"
import { StartThrottle } from "./StartThrottle.ts"

/** A link that opens no session: the same page and status whatever the reason, so it tells nothing of why. */
export const LINK_GONE_STATUS = 410

/** A link from an address that opened too many links that opened no session lately, or too many at once. */
export const THROTTLED_STATUS = 429

const HTML = "text/html; charset=utf-8"

/** The headers every delivery is sent with, as the "verify signatures" snippets name them. */
export const SIGNING_HEADERS: SigningHeaders = {
  signature: "X-Webhook-Signature",
  timestamp: "X-Webhook-Timestamp",
  event: "X-Webhook-Event",
  delivery: "X-Webhook-Delivery",
}

const html = (status: number, body: string, session?: PortalSession) =>
  Effect.map(
    session === undefined ? headersFor(null, HTML) : sessionHeaders(session, HTML),
    (headers) => new Response(body, { status, headers }),
  )

const linkGone = () => html(LINK_GONE_STATUS, linkNoLongerValidPage())

const throttled = (error: AddressThrottled) =>
  Effect.map(html(THROTTLED_STATUS, linkCannotOpenNowPage()), (response) => {
    response.headers.set("retry-after", String(error.retryAfterSeconds))
    return response
  })

const openedNothing = <A, E>(exit: Exit.Exit<A | undefined, E>) =>
  Exit.isSuccess(exit) && exit.value === undefined

/**
 * `GET /portal/start?code=...`: the one-time link's exchange for the session's cookie, under the throttle of the
 * request's address (`StartThrottle`), where a code that opens no session counts as a failure.
 */
const startRoute: Route<PortalSessions | PortalConfig | StartThrottle> = {
  method: "GET",
  path: "/portal/start",
  access: "public",
  answerRefusedAddress: linkGone,
  handle: (request) =>
    Effect.gen(function* () {
      const exchanged = yield* StartThrottle.use((throttle) =>
        throttle.guard(
          request.remoteAddress,
          PortalSessions.use((sessions) => sessions.exchange(request.query.get("code") ?? undefined)),
          openedNothing,
        ),
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
    }).pipe(Effect.catchTag("AddressThrottled", throttled)),
}

/** `GET /portal/api/session`: whose webhooks, whether read only, until when, and the CSRF token of changes. */
const sessionRoute = portalRoute({
  method: "GET",
  path: "/portal/api/session",
  change: false,
  handle: (session, request) =>
    Effect.succeed(
      encoded(SessionAnswer)({
        ...session.holder,
        read_only: session.readOnly,
        expires_at: session.expiresAt.toISOString(),
        parent_origin: session.parentOrigin,
        csrf_token: csrfToken(portalToken(request.headers)!),
        brand: session.brand,
        signing_headers: SIGNING_HEADERS,
      }),
    ),
})

/** The read services' failures as the contract's error bodies: 422 naming each field, 404 alike for any delivery. */
const refusalOf = (error: PortalFilterInvalid | PortalDeliveryNotFound) =>
  error._tag === "PortalFilterInvalid"
    ? invalidFields("Invalid delivery filters.", error.fields)
    : notFound("Delivery")

const readRoutes = [
  portalRoute({
    method: "GET",
    path: "/portal/api/endpoints",
    change: false,
    handle: (session) =>
      PortalReads.use((reads) => reads.endpoints(session)).pipe(Effect.map(encoded(EndpointsAnswer))),
  }),
  portalRoute({
    method: "GET",
    path: "/portal/api/endpoints/:id/health",
    change: false,
    handle: (session, request) =>
      PortalReads.use((reads) => reads.health(session, request.params.id ?? "")).pipe(
        Effect.flatMap((answer) =>
          answer === undefined
            ? Effect.fail(notFound("Endpoint"))
            : Effect.succeed(encoded(EndpointHealthAnswer)(answer)),
        ),
      ),
  }),
  portalRoute({
    method: "GET",
    path: "/portal/api/deliveries",
    change: false,
    handle: (session, request) =>
      PortalReads.use((reads) => reads.deliveries(session, fromSearchParams(request.query))).pipe(
        Effect.mapError(refusalOf),
        Effect.map(encoded(DeliveryPage)),
      ),
  }),
  portalRoute({
    method: "GET",
    path: "/portal/api/deliveries/:id",
    change: false,
    handle: (session, request) =>
      PortalReads.use((reads) => reads.delivery(session, request.params.id ?? "")).pipe(
        Effect.mapError(refusalOf),
        Effect.map(encoded(DeliveryDetailAnswer)),
      ),
  }),
  portalRoute({
    method: "GET",
    path: "/portal/api/events",
    change: false,
    handle: (session) =>
      PortalReads.use((reads) => Effect.succeed(encoded(EventsAnswer)(reads.events(session)))),
  }),
]

/**
 * The portal gateway's routes: the one-time link's exchange, the session, its holder's reads, changes, recoveries
 * and live view; the app's page and assets follow them (`Site.ts`).
 */
export const portalRoutes: ReadonlyArray<
  Route<
    | PortalSessions
    | PortalConfig
    | PortalReads
    | PortalChanges
    | PortalRecoveries
    | PortalLive
    | StartThrottle
  >
> = [startRoute, sessionRoute, ...readRoutes, ...changeRoutes, ...recoverRoutes, ...liveRoutes]

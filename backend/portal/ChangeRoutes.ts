import { Effect } from "effect"
import type { HttpRequest } from "../platform/Http.ts"
import {
  CustomHeadersAnswer,
  EndpointAnswer,
  RetryAnswer,
  RotateAnswer,
  SecretAnswer,
  TestAnswer,
} from "./Api.ts"
import { PortalChanges } from "./PortalChanges.ts"
import { encoded, objectBody, portalRoute } from "./Routes.ts"

const idOf = (request: HttpRequest) => request.params.id ?? ""

/*
 * The portal's changes, each in the route frame of `Routes.ts` (refused to a read-only session and without the
 * CSRF token, audited on the channel `portal`), over `PortalChanges`, scoped to the session's holder.
 */
export const changeRoutes = [
  portalRoute({
    method: "POST",
    path: "/portal/api/endpoints",
    change: true,
    handle: (session, request) =>
      objectBody(request, "Invalid endpoint params.").pipe(
        Effect.flatMap((body) => PortalChanges.use((changes) => changes.create(session, body))),
        Effect.map(encoded(EndpointAnswer, 201)),
      ),
  }),
  portalRoute({
    method: "PUT",
    path: "/portal/api/endpoints/:id",
    change: true,
    handle: (session, request) =>
      objectBody(request, "Endpoint invalid.").pipe(
        Effect.flatMap((body) =>
          PortalChanges.use((changes) => changes.update(session, idOf(request), body)),
        ),
        Effect.map(encoded(EndpointAnswer)),
      ),
  }),
  portalRoute({
    method: "DELETE",
    path: "/portal/api/endpoints/:id",
    change: true,
    handle: (session, request) =>
      PortalChanges.use((changes) => changes.remove(session, idOf(request))).pipe(
        Effect.as(new Response(null, { status: 204 })),
      ),
  }),
  ...(["pause", "resume"] as const).map((action) =>
    portalRoute({
      method: "POST",
      path: `/portal/api/endpoints/:id/${action}`,
      change: true,
      handle: (session, request) =>
        PortalChanges.use((changes) => changes.setPaused(session, idOf(request), action === "pause")).pipe(
          Effect.map(encoded(EndpointAnswer)),
        ),
    }),
  ),
  portalRoute({
    method: "GET",
    path: "/portal/api/endpoints/:id/headers",
    change: false,
    handle: (session, request) =>
      PortalChanges.use((changes) => changes.headers(session, idOf(request))).pipe(
        Effect.map(encoded(CustomHeadersAnswer)),
      ),
  }),
  portalRoute({
    method: "PUT",
    path: "/portal/api/endpoints/:id/headers",
    change: true,
    handle: (session, request) =>
      objectBody(request, "Custom headers invalid.").pipe(
        Effect.flatMap((body) =>
          PortalChanges.use((changes) => changes.setHeaders(session, idOf(request), body)),
        ),
        Effect.map(encoded(CustomHeadersAnswer)),
      ),
  }),
  portalRoute({
    method: "POST",
    path: "/portal/api/endpoints/:id/test",
    change: true,
    handle: (session, request) =>
      objectBody(request, "Invalid test event.").pipe(
        Effect.flatMap((body) =>
          PortalChanges.use((changes) => changes.sendTest(session, idOf(request), body)),
        ),
        Effect.map(encoded(TestAnswer, 202)),
      ),
  }),
  portalRoute({
    method: "POST",
    path: "/portal/api/deliveries/:id/retry",
    change: true,
    handle: (session, request) =>
      PortalChanges.use((changes) => changes.retry(session, idOf(request))).pipe(
        Effect.map(encoded(RetryAnswer, 202)),
      ),
  }),
  portalRoute({
    method: "GET",
    path: "/portal/api/secret",
    change: false,
    handle: (session) =>
      PortalChanges.use((changes) => changes.secret(session)).pipe(Effect.map(encoded(SecretAnswer))),
  }),
  portalRoute({
    method: "POST",
    path: "/portal/api/secret/rotate",
    change: true,
    // The new secret is in this answer only; every portal answer is `cache-control: no-store`.
    handle: (session, request) =>
      objectBody(request, "Invalid rotation.").pipe(
        Effect.flatMap((body) => PortalChanges.use((changes) => changes.rotate(session, body))),
        Effect.map(encoded(RotateAnswer, 201)),
      ),
  }),
]

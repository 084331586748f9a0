import { Effect } from "effect"
import { RecoveryAnswer } from "./Api.ts"
import { PortalRecoveries } from "./Recoveries.ts"
import { encoded, objectBody, portalRoute } from "./Routes.ts"

/**
 * Recover: `POST /portal/api/endpoints/{id}/recoveries` previews one (201), `POST /portal/api/recoveries/{id}/start`
 * starts it (200), `GET /portal/api/recoveries/{id}` follows it.
 */
export const recoverRoutes = [
  portalRoute({
    method: "POST",
    path: "/portal/api/endpoints/:id/recoveries",
    change: true,
    handle: (session, request) =>
      Effect.gen(function* () {
        const body = yield* objectBody(request, "Invalid recovery.")
        const recovery = yield* PortalRecoveries.use((r) => r.preview(session, request.params.id ?? "", body))
        return encoded(RecoveryAnswer, 201)({ recovery })
      }),
  }),
  portalRoute({
    method: "POST",
    path: "/portal/api/recoveries/:id/start",
    change: true,
    handle: (session, request) =>
      PortalRecoveries.use((r) => r.start(session, request.params.id ?? "")).pipe(
        Effect.map((recovery) => encoded(RecoveryAnswer)({ recovery })),
      ),
  }),
  portalRoute({
    method: "GET",
    path: "/portal/api/recoveries/:id",
    change: false,
    handle: (session, request) =>
      PortalRecoveries.use((r) => r.get(session, request.params.id ?? "")).pipe(
        Effect.map((recovery) => encoded(RecoveryAnswer)({ recovery })),
      ),
  }),
]

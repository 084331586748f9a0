import { Clock, Context, Effect, Layer } from "effect"
import { recordAudit } from "../audit/Audit.ts"
import { Db } from "../platform/Db.ts"
import { instantProblemMessage, readInstant } from "../platform/Dates.ts"
import { BulkRetries, DEFAULT_RATE, type RecoveryShown } from "../webhooks/bulk/BulkRetries.ts"
import { readId } from "../webhooks/endpoints/DeliveryFilters.ts"
import { EndpointReads } from "../webhooks/endpoints/EndpointReads.ts"
import type { Recovery } from "./Api.ts"
import type { PortalSession } from "./Domain.ts"
import { holderDetails, invalidFields, notFound, PortalRefusal, portalActor } from "./Routes.ts"

/** Why a start is refused while another recovery of the endpoint runs (a 409). */
export const RECOVERY_RUNNING =
  "A recovery of this endpoint is already running: start this one once it has finished."
export const SINCE_FORM = "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z"
export const SINCE_FUTURE = "must not be in the future"

const shown = (recovery: RecoveryShown): Recovery => recovery

/**
 * The portal's recoveries: "send again every failed delivery of this endpoint since ...", the bulk retry of the
 * webhooks context scoped to one of the holder's endpoints, previewed (its snapshot taken, so its total is what a
 * start sends) and then started at the bulk retry's default rate, under its cap. A recovery of an endpoint not the
 * holder's is not found, as an unknown one is. Previews and starts are audited with the session as actor.
 */
export class PortalRecoveries extends Context.Service<PortalRecoveries>()(
  "partner-service/portal/PortalRecoveries",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const bulk = yield* BulkRetries
      const endpointReads = yield* EndpointReads

      const holderEndpoints = (session: PortalSession) => endpointReads.subscriberEndpoints(session.holderId)

      /** The recovery `id` and its endpoint if that endpoint is the holder's; 404 otherwise. */
      const owned = (session: PortalSession, id: string) =>
        Effect.gen(function* () {
          const recovery = yield* bulk
            .recovery(id)
            .pipe(Effect.catchTag("BulkRetryNotFound", () => Effect.fail(notFound("Recovery"))))
          const endpoints = yield* holderEndpoints(session)
          const endpoint = endpoints.find((e) => e.id === recovery.endpoint_id)
          if (endpoint === undefined) return yield* notFound("Recovery")
          return { recovery, endpoint }
        })

      const audit = (session: PortalSession, action: string, recovery: RecoveryShown) =>
        recordAudit(db, {
          actor: portalActor(session),
          action,
          target: `bulk_retry:${recovery.id}`,
          after: {
            endpoint_id: recovery.endpoint_id,
            since: recovery.since,
            total: recovery.total,
            status: recovery.status,
          },
          details: holderDetails(session),
        })

      /** A preview of the failed deliveries of the holder's endpoint `endpointId` since `body.since`. */
      const preview = Effect.fn("PortalRecoveries.preview")(function* (
        session: PortalSession,
        endpointId: string,
        body: unknown,
      ) {
        const id = readId(endpointId)
        const endpoints = yield* holderEndpoints(session)
        const endpoint = endpoints.find((e) => e.id === id && !e.deleted)
        if (endpoint === undefined) return yield* notFound("Endpoint")
        const raw =
          typeof body === "object" && body !== null && !Array.isArray(body)
            ? (body as Record<string, unknown>).since
            : undefined
        const read = typeof raw === "string" ? readInstant(raw) : ({ problem: "form" } as const)
        if (!("at" in read)) {
          return yield* invalidFields("Invalid recovery.", {
            since: instantProblemMessage(read.problem, SINCE_FORM),
          })
        }
        if (read.at.getTime() > (yield* Clock.currentTimeMillis)) {
          return yield* invalidFields("Invalid recovery.", { since: SINCE_FUTURE })
        }
        const recovery = yield* bulk.previewRecovery(endpoint.id, read.at, portalActor(session)).pipe(
          Effect.catchTags({
            BulkRetryInvalid: (e) => Effect.fail(invalidFields("Invalid recovery.", e.fields)),
            DeliveryFilterInvalid: (e) => Effect.fail(invalidFields("Invalid recovery.", e.fields)),
          }),
        )
        yield* audit(session, "recoveries.preview", recovery)
        return shown(recovery)
      })

      /**
       * Starts the holder's preview `id`; one recovery of an endpoint runs at a time (409 otherwise), and a deleted
       * endpoint's is not started (404, as its endpoint is gone).
       */
      const start = Effect.fn("PortalRecoveries.start")(function* (session: PortalSession, id: string) {
        const { recovery, endpoint } = yield* owned(session, id)
        if (endpoint.deleted) return yield* notFound("Endpoint")
        yield* bulk.start(recovery.id, DEFAULT_RATE, portalActor(session)).pipe(
          Effect.catchTags({
            BulkRetryInvalid: (e) => Effect.fail(invalidFields("Invalid recovery start.", e.fields)),
            BulkRetryNotFound: () => Effect.fail(notFound("Recovery")),
            RecoveryRunning: () => Effect.fail(new PortalRefusal({ status: 409, error: RECOVERY_RUNNING })),
          }),
        )
        const started = yield* bulk.recovery(recovery.id).pipe(Effect.orDie)
        yield* audit(session, "recoveries.start", started)
        return shown(started)
      })

      /** The holder's recovery `id` with its progress. */
      const get = Effect.fn("PortalRecoveries.get")(function* (session: PortalSession, id: string) {
        return shown((yield* owned(session, id)).recovery)
      })

      return { preview, start, get }
    }),
  },
) {
  static readonly layer = Layer.effect(PortalRecoveries, PortalRecoveries.make).pipe(
    Layer.provide(EndpointReads.layer),
  )
}

import { Context, Effect, Layer } from "effect"
import { isEventName } from "../events/Catalog.ts"
import { isoOrNull } from "../platform/Dates.ts"
import {
  type DeliveryNotFound,
  type EndpointInvalid,
  type EndpointNotFound,
  MAX_OVERLAP_MS,
  type OwnerUnknown,
  type ProviderNotProvisioned,
  type SubscriberRef,
} from "../webhooks/Domain.ts"
import { readCustomHeaders } from "../webhooks/endpoints/CustomHeaders.ts"
import { Endpoints, readEndpointFields } from "../webhooks/endpoints/Endpoints.ts"
import { EndpointOperations } from "../webhooks/endpoints/Operations.ts"
import { Secrets } from "../webhooks/endpoints/Secrets.ts"
import type {
  CustomHeadersAnswer,
  EndpointAnswer,
  RetryAnswer,
  RotateAnswer,
  SecretAnswer,
  TestAnswer,
} from "./Api.ts"
import type { PortalSession } from "./Domain.ts"
import { catalogExample, PortalReads } from "./PortalReads.ts"
import { invalidFields, notFound, portalActor, PortalRefusal } from "./Routes.ts"

/** The suspension reason of an endpoint paused in the portal. */
export const PAUSED_REASON = "Paused in the partner portal"

export const MAX_OVERLAP_HOURS = MAX_OVERLAP_MS / 3_600_000

export const NOT_AN_EVENT = "must be the name of a catalog event (GET /portal/api/events)"
export const OVERLAP_HOURS = `must be a whole number of hours from 0 to ${MAX_OVERLAP_HOURS}`
export const NO_CUSTOM_HEADERS =
  "this endpoint is sent without custom headers: the service's operators set the first ones"
export const ENDPOINT_DELETED = "The delivery's endpoint was deleted: it cannot be sent again."

/** The fields of an endpoint the portal changes; any other key (`status` too: pause and resume set it) is ignored. */
const ENDPOINT_KEYS = ["name", "destination_url", "events"] as const

const endpointFields = (body: Readonly<Record<string, unknown>>) =>
  Object.fromEntries(ENDPOINT_KEYS.filter((key) => body[key] !== undefined).map((key) => [key, body[key]]))

const refOf = (session: PortalSession): SubscriberRef =>
  "owner" in session.holder
    ? { kind: "owner", slug: session.holder.owner.slug }
    : { kind: "provider", name: session.holder.provider.name }

type WebhookFailure = EndpointInvalid | EndpointNotFound | OwnerUnknown | ProviderNotProvisioned

/** The webhooks context's refusals as the portal's answers: every subscriber or endpoint not there a 404. */
const refusalOf = (invalid: string) => (error: WebhookFailure) =>
  error._tag === "EndpointInvalid" ? invalidFields(invalid, error.fields) : notFound("Endpoint")

/**
 * What a portal session changes of its holder's webhooks, through the webhooks context's services: endpoints,
 * their status, the subscriber's custom headers, test deliveries, retries and the signing secret. Every id is
 * checked against the holder's own (another holder's answers as an unknown one, 404), and every change is
 * audited with the session as its actor, in the change's transaction; the route frame gives the entries their
 * channel and the holder.
 */
export class PortalChanges extends Context.Service<PortalChanges>()("partner-service/portal/PortalChanges", {
  make: Effect.gen(function* () {
    const endpoints = yield* Endpoints
    const operations = yield* EndpointOperations
    const secrets = yield* Secrets
    const reads = yield* PortalReads

    /** One of the holder's endpoints as the list shows it, the answer of every endpoint change. */
    const answer = (session: PortalSession, id: number) =>
      Effect.flatMap(reads.endpoint(session, id), (endpoint) =>
        endpoint === undefined
          ? Effect.fail(notFound("Endpoint"))
          : Effect.succeed({ endpoint } satisfies EndpointAnswer),
      )

    /** The id of one of the holder's endpoints not deleted, as the webhooks context's operations take it. */
    const liveEndpoint = (session: PortalSession, id: string) =>
      Effect.flatMap(reads.liveEndpointId(session, id), (found) =>
        found === undefined ? Effect.fail(notFound("Endpoint")) : Effect.succeed(String(found)),
      )

    const create = Effect.fn("PortalChanges.create")(function* (
      session: PortalSession,
      body: Readonly<Record<string, unknown>>,
    ) {
      const created = yield* endpoints
        .create(refOf(session), readEndpointFields(endpointFields(body), true), portalActor(session))
        .pipe(Effect.mapError(refusalOf("Invalid endpoint params.")))
      return yield* answer(session, created.id)
    })

    const update = Effect.fn("PortalChanges.update")(function* (
      session: PortalSession,
      id: string,
      body: Readonly<Record<string, unknown>>,
    ) {
      const updated = yield* endpoints
        .update(refOf(session), id, readEndpointFields(endpointFields(body), false), portalActor(session))
        .pipe(Effect.mapError(refusalOf("Endpoint invalid.")))
      return yield* answer(session, updated.id)
    })

    /** Soft delete, as the Partner API's: its undelivered deliveries fail as canceled. */
    const remove = Effect.fn("PortalChanges.remove")(function* (session: PortalSession, id: string) {
      yield* endpoints
        .remove(refOf(session), id, portalActor(session))
        .pipe(Effect.mapError(refusalOf("Endpoint invalid.")))
    })

    /** Paused is `disabled` with the portal's reason (its deliveries fail while it lasts); resumed is `active`. */
    const setPaused = Effect.fn("PortalChanges.setPaused")(function* (
      session: PortalSession,
      id: string,
      paused: boolean,
    ) {
      const endpointId = yield* liveEndpoint(session, id)
      yield* operations
        .setStatus(
          endpointId,
          paused ? "disabled" : "active",
          paused ? PAUSED_REASON : undefined,
          portalActor(session),
        )
        .pipe(
          Effect.catchTags({
            EndpointNotFound: () => Effect.fail(notFound("Endpoint")),
            // Only a reason longer than its limit is refused, and the portal's is not.
            WebhookCommandRejected: (rejected) => Effect.die(rejected),
          }),
        )
      return yield* answer(session, Number(endpointId))
    })

    /** The names of the custom headers the endpoint's subscriber sends with its deliveries. */
    const headerNames = (endpointId: string) =>
      operations.get(endpointId).pipe(
        Effect.map((endpoint) => Object.keys(endpoint.custom_headers)),
        Effect.catchTags({ EndpointNotFound: () => Effect.fail(notFound("Endpoint")) }),
      )

    const headers = Effect.fn("PortalChanges.headers")(function* (session: PortalSession, id: string) {
      return { names: yield* headerNames(yield* liveEndpoint(session, id)) } satisfies CustomHeadersAnswer
    })

    /**
     * The subscriber's custom headers, by the console's rules (a null value keeps the stored one); only once the
     * operators have set some, since they usually carry the receiver's credentials the operators agreed.
     */
    const setHeaders = Effect.fn("PortalChanges.setHeaders")(function* (
      session: PortalSession,
      id: string,
      body: Readonly<Record<string, unknown>>,
    ) {
      const endpointId = yield* liveEndpoint(session, id)
      if ((yield* headerNames(endpointId)).length === 0) {
        return yield* invalidFields("Custom headers invalid.", { custom_headers: NO_CUSTOM_HEADERS })
      }
      const read = readCustomHeaders(body.custom_headers, true)
      if (read.problems.length > 0) {
        return yield* new PortalRefusal({
          status: 422,
          error: "Custom headers invalid.",
          errors: { custom_headers: [...read.problems] },
        })
      }
      const changed = yield* operations.setHeaders(endpointId, read, portalActor(session)).pipe(
        Effect.catchTags({
          EndpointNotFound: () => Effect.fail(notFound("Endpoint")),
          OwnerUnknown: () => Effect.fail(notFound("Endpoint")),
          ProviderNotProvisioned: () => Effect.fail(notFound("Endpoint")),
          WebhookCommandRejected: (rejected) =>
            Effect.fail(invalidFields("Custom headers invalid.", { custom_headers: rejected.message })),
        }),
      )
      return { names: Object.keys(changed.custom_headers) } satisfies CustomHeadersAnswer
    })

    /** A delivery of a catalog event to the endpoint with the catalog's example, through the normal pipeline. */
    const sendTest = Effect.fn("PortalChanges.sendTest")(function* (
      session: PortalSession,
      id: string,
      body: Readonly<Record<string, unknown>>,
    ) {
      const endpointId = yield* liveEndpoint(session, id)
      const event = body.event
      if (typeof event !== "string" || !isEventName(event)) {
        return yield* invalidFields("Invalid test event.", { event: NOT_AN_EVENT })
      }
      const sent = yield* operations
        .sendTest(endpointId, portalActor(session), { event, body: catalogExample(session, event) })
        .pipe(Effect.catchTags({ EndpointNotFound: () => Effect.fail(notFound("Endpoint")) }))
      const shown = yield* reads
        .deliverySummary(session, String(sent.id))
        .pipe(Effect.mapError(() => notFound("Delivery")))
      return { delivery: shown.delivery } satisfies TestAnswer
    })

    /** A new series of attempts from attempt 1, as the Partner API's retry. */
    const retry = Effect.fn("PortalChanges.retry")(function* (session: PortalSession, id: string) {
      const found = yield* reads
        .deliverySummary(session, id)
        .pipe(Effect.mapError(() => notFound("Delivery")))
      yield* endpoints.retry(refOf(session), String(found.endpointId), id, portalActor(session)).pipe(
        Effect.mapError(
          (error: EndpointNotFound | DeliveryNotFound | OwnerUnknown | ProviderNotProvisioned) =>
            // The delivery is the holder's: its endpoint not being there means it was deleted.
            error._tag === "EndpointNotFound"
              ? new PortalRefusal({ status: 422, error: ENDPOINT_DELETED })
              : notFound("Delivery"),
        ),
      )
      const shown = yield* reads
        .deliverySummary(session, id)
        .pipe(Effect.mapError(() => notFound("Delivery")))
      return { delivery: shown.delivery } satisfies RetryAnswer
    })

    const secret = Effect.fn("PortalChanges.secret")(function* (session: PortalSession) {
      const ages = yield* secrets.ages(refOf(session)).pipe(Effect.mapError(() => notFound("Signing secret")))
      return {
        created_at: isoOrNull(ages.created_at),
        previous_expires_at: isoOrNull(ages.previous_expires_at),
        max_overlap_hours: MAX_OVERLAP_HOURS,
      } satisfies SecretAnswer
    })

    /** A new signing secret, shown this once; the previous ones keep signing for `overlap_hours`. */
    const rotate = Effect.fn("PortalChanges.rotate")(function* (
      session: PortalSession,
      body: Readonly<Record<string, unknown>>,
    ) {
      const hours = body.overlap_hours
      if (typeof hours !== "number" || !Number.isInteger(hours) || hours < 0 || hours > MAX_OVERLAP_HOURS) {
        return yield* invalidFields("Invalid rotation.", { overlap_hours: OVERLAP_HOURS })
      }
      const rotated = yield* operations.rotate(refOf(session), hours * 3_600_000, portalActor(session)).pipe(
        Effect.catchTags({
          WebhookCommandRejected: (rejected) =>
            Effect.fail(invalidFields("Invalid rotation.", { overlap_hours: rejected.message })),
          OwnerUnknown: () => Effect.fail(notFound("Signing secret")),
          ProviderNotProvisioned: () => Effect.fail(notFound("Signing secret")),
        }),
      )
      return {
        secret: rotated.secret,
        created_at: rotated.created_at,
        previous_expires_at: rotated.previous_expires_at,
      } satisfies RotateAnswer
    })

    return { create, update, remove, setPaused, headers, setHeaders, sendTest, retry, secret, rotate }
  }),
}) {
  static readonly layer = Layer.effect(PortalChanges, PortalChanges.make).pipe(
    Layer.provide(
      Layer.mergeAll(Endpoints.layer, EndpointOperations.layer, Secrets.layer, PortalReads.layer),
    ),
  )
}

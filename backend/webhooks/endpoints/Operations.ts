import { randomUUID } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { Db } from "../../platform/Db.ts"
import {
  CustomHeaderNotFound,
  describeSubscriber,
  type EndpointStatus,
  EndpointNotFound,
  type SubscriberRef,
  WebhookCommandRejected,
} from "../Domain.ts"
import { type EndpointListFilter, type OperatorEndpointRow, OperationsRepo } from "./OperationsRepo.ts"
import type { CustomHeadersBody } from "./CustomHeaders.ts"
import { Secrets } from "./Secrets.ts"

/** The event name of the console's test deliveries: outside the catalog, so no partner event is mistaken for one. */
export const TEST_EVENT = "webhook.test"
const ID = /^\d{1,18}$/
const MAX_REASON_LENGTH = 500

/**
 * An endpoint as the operator console shows it: with its owner or provider and the names of its subscriber's
 * custom headers. Their values are null (masked) for every role: they usually hold the receiver's credentials, and
 * an admin reads one only through `revealHeader`, which is audited.
 */
export interface OperatorEndpoint {
  readonly id: number
  readonly name: string
  readonly owner: { readonly slug: string; readonly name: string } | null
  readonly provider: { readonly name: string } | null
  readonly destination_url: string
  readonly events: ReadonlyArray<string>
  readonly status: EndpointStatus
  readonly suspension_reason: string | null
  readonly custom_headers: Readonly<Record<string, null>>
  readonly created_at: string
  readonly updated_at: string
}

export const toOperatorEndpoint = (row: OperatorEndpointRow): OperatorEndpoint => ({
  id: Number(row.id),
  name: row.name,
  owner: row.owner_slug === null ? null : { slug: row.owner_slug, name: row.owner_name ?? row.owner_slug },
  provider: row.provider_name === null ? null : { name: row.provider_name },
  destination_url: row.destination_url,
  events: row.events,
  status: row.status,
  suspension_reason: row.suspension_reason,
  custom_headers: Object.fromEntries(Object.keys(row.custom_headers).map((name) => [name, null])),
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

const refOf = (row: OperatorEndpointRow): SubscriberRef =>
  row.owner_slug !== null
    ? { kind: "owner", slug: row.owner_slug }
    : { kind: "provider", name: row.provider_name! }

const endpointTarget = (id: string | number) => `endpoint:${id}`

/**
 * Endpoints, deliveries and secrets of every owner and provider, for operators: the partner API's effects
 * (status) and the CLI's (custom headers, rotation) reached by endpoint id. Every change is audited with
 * `actor`, in the change's transaction.
 */
export class EndpointOperations extends Context.Service<EndpointOperations>()(
  "partner-service/webhooks/EndpointOperations",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const repo = yield* OperationsRepo
      const secrets = yield* Secrets

      const endpointRow = (id: string, lock = false) =>
        Effect.gen(function* () {
          const row = ID.test(id) ? yield* repo.endpoint(id, lock) : undefined
          if (row === undefined) return yield* new EndpointNotFound()
          return row
        })

      const list = Effect.fn("EndpointOperations.list")(function* (filter: EndpointListFilter) {
        return (yield* repo.endpoints(filter)).map(toOperatorEndpoint)
      })

      const get = Effect.fn("EndpointOperations.get")(function* (id: string) {
        return toOperatorEndpoint(yield* endpointRow(id))
      })

      /**
       * The partner API's status change (held deliveries go out once active, fail once disabled), with the
       * operator's reason kept as the suspension reason (none when activated).
       */
      const setStatus = Effect.fn("EndpointOperations.setStatus")(function* (
        id: string,
        status: EndpointStatus,
        reason: string | undefined,
        actor: string,
      ) {
        if (reason !== undefined && reason.length > MAX_REASON_LENGTH) {
          return yield* new WebhookCommandRejected({
            message: `reason is longer than ${MAX_REASON_LENGTH} characters`,
          })
        }
        return yield* db.transaction(
          Effect.gen(function* () {
            const current = yield* endpointRow(id, true)
            const kept = status === "active" ? null : (reason ?? null)
            yield* repo.setStatus(current.id, status, kept)
            const updated = (yield* repo.endpoint(current.id))!
            yield* repo.audit({
              actor,
              action: "endpoints.set_status",
              target: endpointTarget(current.id),
              before: { status: current.status, suspension_reason: current.suspension_reason },
              after: { status: updated.status, suspension_reason: updated.suspension_reason },
            })
            return toOperatorEndpoint(updated)
          }),
        )
      })

      /**
       * A signed test delivery to the endpoint, recorded and retried like any other; `held` while the endpoint is
       * suspended. Its event id is `test:<uuid>`, never an event's. By default the event is `webhook.test`
       * (outside the catalog, the console's test); given an `example`, it is that catalog event with that body
       * (the partner portal's test of a real event type).
       */
      const sendTest = Effect.fn("EndpointOperations.sendTest")(function* (
        id: string,
        actor: string,
        example?: { readonly event: string; readonly body: unknown },
      ) {
        const sentAt = new Date(yield* Clock.currentTimeMillis).toISOString()
        return yield* db.transaction(
          Effect.gen(function* () {
            const endpoint = yield* endpointRow(id)
            const ownerSlug = endpoint.owner_slug ?? ""
            const event = example?.event ?? TEST_EVENT
            const body = example?.body ?? {
              event: TEST_EVENT,
              property_owner_slug: ownerSlug,
              data: { test: { endpoint_id: Number(endpoint.id), sent_at: sentAt } },
            }
            const held = endpoint.status === "suspended"
            const deliveryId = yield* repo.insertTestDelivery(
              endpoint.id,
              `test:${randomUUID()}`,
              event,
              ownerSlug,
              new TextEncoder().encode(JSON.stringify(body)),
              held,
            )
            yield* repo.audit({
              actor,
              action: "endpoints.send_test",
              target: endpointTarget(endpoint.id),
              after: { delivery_id: Number(deliveryId) },
              ...(example === undefined ? {} : { details: { event } }),
            })
            return { id: Number(deliveryId), status: held ? ("held" as const) : ("pending" as const) }
          }),
        )
      })

      /**
       * The custom headers of the endpoint's owner or provider (shared by its endpoints), by the CLI's rules; a
       * null value keeps the stored one, so the masked headers sent back unchanged change nothing.
       */
      const setHeaders = Effect.fn("EndpointOperations.setHeaders")(function* (
        id: string,
        headers: CustomHeadersBody,
        actor: string,
      ) {
        const endpoint = yield* endpointRow(id)
        yield* secrets.setHeaders(refOf(endpoint), headers, actor, true)
        return toOperatorEndpoint((yield* repo.endpoint(endpoint.id))!)
      })

      /** One custom header's value, shown to an admin on purpose: audited by name, never with the value. */
      const revealHeader = Effect.fn("EndpointOperations.revealHeader")(function* (
        id: string,
        name: string,
        actor: string,
      ) {
        return yield* db.transaction(
          Effect.gen(function* () {
            const endpoint = yield* endpointRow(id)
            // Header names ignore case, and the stored ones are distinct so.
            const stored = Object.keys(endpoint.custom_headers).find(
              (key) => key.toLowerCase() === name.toLowerCase(),
            )
            if (stored === undefined) return yield* new CustomHeaderNotFound()
            yield* repo.audit({
              actor,
              action: "webhook_headers.reveal",
              target: describeSubscriber(refOf(endpoint)),
              details: { name: stored, endpoint_id: Number(endpoint.id) },
            })
            return { name: stored, value: endpoint.custom_headers[stored]! }
          }),
        )
      })

      /** Every subscriber with its active secrets' times and fingerprints (never a secret). */
      const secretsOverview = Effect.fn("EndpointOperations.secretsOverview")(function* () {
        return yield* Effect.forEach(yield* repo.subscriberSecrets, (row) =>
          Effect.map(
            Effect.forEach(row.secrets, ({ created_at, expires_at, sealed }) =>
              Effect.map(secrets.fingerprint(Buffer.from(sealed, "base64")), (fingerprint) => ({
                created_at,
                expires_at,
                fingerprint,
              })),
            ),
            (shown) => ({
              owner:
                row.owner_slug === null
                  ? null
                  : { slug: row.owner_slug, name: row.owner_name ?? row.owner_slug },
              provider: row.provider_name === null ? null : { name: row.provider_name },
              secrets: shown,
            }),
          ),
        )
      })

      /** The CLI's rotation: the new secret (shown once) and when the previous ones stop signing. */
      const rotate = Effect.fn("EndpointOperations.rotate")(function* (
        ref: SubscriberRef,
        overlapMs: number,
        actor: string,
      ) {
        const rotated = yield* secrets.rotate(ref, overlapMs, actor)
        return {
          secret: rotated.secret,
          created_at: rotated.created_at,
          previous_expires_at: rotated.previous_secrets_expire_at,
          target: describeSubscriber(ref),
        }
      })

      /** Ends the rotation overlap of the owner's or provider's secrets: only the newest signs from now on. */
      const endOverlap = (ref: SubscriberRef, actor: string) => secrets.endOverlap(ref, actor)

      return { list, get, setStatus, sendTest, setHeaders, revealHeader, secretsOverview, rotate, endOverlap }
    }),
  },
) {
  static readonly layer = Layer.effect(EndpointOperations, EndpointOperations.make).pipe(
    Layer.provide(OperationsRepo.layer),
    Layer.provide(Secrets.layer),
  )
}

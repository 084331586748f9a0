import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Crypto } from "../../backend/platform/Crypto.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { RouterRepo, type EventToRoute } from "../../backend/webhooks/delivery/RouterRepo.ts"
import { EventNames } from "../../backend/events/Catalog.ts"
import { makeEnvelope } from "../../backend/events/Envelope.ts"
import {
  attemptSubject,
  encodeAttempt,
  type StatusMessage,
} from "../../backend/webhooks/delivery/Messages.ts"
import { EventRouter } from "../../backend/webhooks/delivery/Router.ts"
import {
  awaitProspect,
  completeProspect,
  postProspect,
  prospectService,
  prospectSetUp,
} from "../support/Prospects.ts"
import { startReceiver, testCa } from "../support/Receiver.ts"
import { eventually, readRawStream } from "../support/Streams.ts"
import {
  awaitDeliveries,
  deliveriesOf,
  endpoint,
  engineService,
  examplePayload,
  owner,
  property,
  provider,
  publishEvent,
  query,
  subscriber,
  verifySignature,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

/** An event routed by hand: no outbox times, stored by JetStream just now. */
const unstamped = { acceptedAt: null, committedAt: null, publishedAt: new Date() }

const service = engineService()

describe("event router", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect(
      "delivers each of the fifteen events with the exact envelope, headers and signature over the raw body",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const acme = yield* owner("acme-catalog")
          const sub = yield* subscriber({ ownerId: acme.id })
          const id = yield* endpoint(sub.id, receiver.url("/catalog"), EventNames)
          const published = []
          for (const name of EventNames) {
            published.push({ name, ...(yield* publishEvent(name, acme.slug, examplePayload(name))) })
          }
          const rows = yield* awaitDeliveries(
            id,
            (rows) => rows.length === EventNames.length && rows.every((r) => r.status === "delivered"),
          )
          const requests = receiver.received("/catalog")
          assert.strictEqual(requests.length, EventNames.length)
          for (const event of published) {
            const row = rows.find((r) => r.event_id === event.eventId)
            assert.isDefined(row, event.name)
            assert.strictEqual(row!.event, event.name)
            assert.strictEqual(row!.attempt_number, 1)
            assert.strictEqual(
              row!.payload.toString("utf8"),
              event.body,
              "stored bytes differ from the event",
            )
            const request = requests.find((r) => r.headers["x-webhook-delivery"] === row!.id)
            assert.isDefined(request, `${event.name}: no request carried delivery ${row!.id}`)
            assert.strictEqual(request!.body.toString("utf8"), event.body, `${event.name}: body bytes differ`)
            const body = JSON.parse(request!.body.toString("utf8")) as Record<string, unknown>
            assert.deepStrictEqual(Object.keys(body), ["event", "property_owner_slug", "data"])
            assert.strictEqual(body.event, event.name)
            assert.strictEqual(body.property_owner_slug, acme.slug)
            assert.strictEqual(request!.headers["content-type"], "application/json")
            assert.strictEqual(request!.headers["x-webhook-event"], event.name)
            const timestamp = request!.headers["x-webhook-timestamp"] ?? ""
            assert.match(timestamp, /^\d{10}$/)
            assert.isAtMost(Math.abs(Number(timestamp) - request!.at / 1000), 5)
            assert.match(request!.headers["x-webhook-signature"] ?? "", /^t=\d+,v1=[0-9a-f]{64}$/)
            const check = verifySignature(request!.headers, request!.body, [sub.secret])
            assert.strictEqual(check.timestamp, timestamp)
            assert.deepStrictEqual(check.verifiedBy, [sub.secret], `${event.name}: signature does not verify`)
          }
        }).pipe(Effect.scoped),
    )

    it.effect("gives two endpoints subscribed to one event two deliveries with different ids", () =>
      Effect.gen(function* () {
        const {
          receiver,
          owner: acme,
          subscriber: sub,
          endpointId: first,
        } = yield* receiverEndpoint("acme-two", "/one", ["policy.created"])
        const second = yield* endpoint(sub.id, receiver.url("/two"), ["policy.created", "policy.updated"])
        const event = yield* publishEvent("policy.created", acme.slug, examplePayload("policy.created"))
        const [a] = yield* awaitDeliveries(first, (rows) => rows[0]?.status === "delivered")
        const [b] = yield* awaitDeliveries(second, (rows) => rows[0]?.status === "delivered")
        assert.strictEqual(a!.event_id, event.eventId)
        assert.strictEqual(b!.event_id, event.eventId)
        assert.notStrictEqual(a!.id, b!.id)
        assert.deepStrictEqual(
          [receiver.received("/one"), receiver.received("/two")].map((r) =>
            r.map((x) => x.headers["x-webhook-delivery"]),
          ),
          [[a!.id], [b!.id]],
        )
      }).pipe(Effect.scoped),
    )

    it.effect(
      "sends nothing to endpoints not subscribed to the event, suspended, disabled, deleted, or of another owner",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const acme = yield* owner("acme-quiet")
          const other = yield* owner("other-quiet")
          const sub = yield* subscriber({ ownerId: acme.id })
          const otherSub = yield* subscriber({ ownerId: other.id })
          const control = yield* endpoint(sub.id, receiver.url("/control"), ["delinquency.created"])
          const suspended = yield* endpoint(
            sub.id,
            receiver.url("/suspended"),
            ["delinquency.created"],
            "suspended",
          )
          const silent = [
            yield* endpoint(sub.id, receiver.url("/unsubscribed"), ["delinquency.resolved"]),
            yield* endpoint(sub.id, receiver.url("/disabled"), ["delinquency.created"], "disabled"),
            yield* endpoint(sub.id, receiver.url("/deleted"), ["delinquency.created"]),
            yield* endpoint(otherSub.id, receiver.url("/other-owner"), ["delinquency.created"]),
          ]
          yield* query((sql) => sql`update webhook_endpoints set deleted_at = now() where id = ${silent[2]!}`)
          yield* publishEvent("delinquency.created", acme.slug, examplePayload("delinquency.created"))
          yield* awaitDeliveries(control, (rows) => rows[0]?.status === "delivered")
          // The router writes every delivery of an event in one statement: the control's is there, so these
          // endpoints got none.
          for (const id of silent) assert.deepStrictEqual(yield* deliveriesOf(id), [])
          // The suspended endpoint's is recorded, held (pending, nothing scheduled) until it is active again.
          const [held] = yield* deliveriesOf(suspended)
          assert.deepStrictEqual([held?.status, held?.next_retry_at], ["pending", null])
          assert.deepStrictEqual(
            receiver.received().map((r) => r.path),
            ["/control"],
          )
        }).pipe(Effect.scoped),
    )

    it.effect(
      "delivers to provider endpoints covering the owner, or the event's property, and to no other provider",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const acme = yield* owner("acme-provided")
          const elsewhere = yield* owner("elsewhere-provided")
          const covered = yield* property(acme.id, "covered")
          const uncovered = yield* property(acme.id, "uncovered")
          const byOwner = yield* subscriber({
            providerId: yield* provider("by-owner", { owners: [acme.id] }),
          })
          const byProperty = yield* subscriber({
            providerId: yield* provider("by-property", { properties: [covered] }),
          })
          const unrelated = yield* subscriber({
            providerId: yield* provider("unrelated", { owners: [elsewhere.id] }),
          })
          const events = ["policy_application.created"]
          const ownerEndpoint = yield* endpoint(byOwner.id, receiver.url("/by-owner"), events)
          const propertyEndpoint = yield* endpoint(byProperty.id, receiver.url("/by-property"), events)
          const unrelatedEndpoint = yield* endpoint(unrelated.id, receiver.url("/unrelated"), events)

          const payload = examplePayload("policy_application.created")
          const onCovered = yield* publishEvent("policy_application.created", acme.slug, payload, {
            propertyId: covered,
          })
          const onUncovered = yield* publishEvent("policy_application.created", acme.slug, payload, {
            propertyId: uncovered,
          })
          const withoutProperty = yield* publishEvent("policy_application.created", acme.slug, payload)

          const ownerRows = yield* awaitDeliveries(
            ownerEndpoint,
            (rows) => rows.length === 3 && rows.every((r) => r.status === "delivered"),
          )
          assert.sameMembers(
            ownerRows.map((r) => r.event_id),
            [onCovered.eventId, onUncovered.eventId, withoutProperty.eventId],
          )
          const propertyRows = yield* deliveriesOf(propertyEndpoint)
          assert.deepStrictEqual(
            propertyRows.map((r) => r.event_id),
            [onCovered.eventId],
          )
          assert.deepStrictEqual(yield* deliveriesOf(unrelatedEndpoint), [])
          yield* awaitDeliveries(propertyEndpoint, (rows) => rows[0]?.status === "delivered")
          const signed = receiver.received("/by-property")[0]!
          assert.deepStrictEqual(
            verifySignature(signed.headers, signed.body, [byProperty.secret]).verifiedBy,
            [byProperty.secret],
          )
          assert.strictEqual(JSON.parse(signed.body.toString()).property_owner_slug, acme.slug)
        }).pipe(Effect.scoped),
    )

    it.effect("records one delivery per endpoint when the router sees an event again", () =>
      Effect.gen(function* () {
        const {
          receiver,
          owner: acme,
          endpointId: id,
        } = yield* receiverEndpoint("acme-again", "/again", ["move_out.initiated"])
        const event = yield* publishEvent(
          "move_out.initiated",
          acme.slug,
          examplePayload("move_out.initiated"),
        )
        yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
        const router = yield* EventRouter
        const delivery = {
          subject: `events.${acme.slug}.move_out.initiated`,
          streamSequence: 0,
          deliveryCount: 2,
          pending: 0,
          publishedAt: new Date(),
          headers: { "Nats-Msg-Id": event.eventId },
          raw: new TextEncoder().encode(event.body),
        }
        yield* router.route(JSON.parse(event.body), delivery)
        yield* router.route(JSON.parse(event.body), delivery)
        const rows = yield* deliveriesOf(id)
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]!.status, "delivered")
        // A control event routed the same way after them: once it is delivered, an attempt the repeats announced
        // would have been made too.
        const control = JSON.stringify(
          makeEnvelope("move_out.initiated", acme.slug, examplePayload("move_out.initiated")),
        )
        yield* router.route(JSON.parse(control), {
          ...delivery,
          deliveryCount: 1,
          headers: { "Nats-Msg-Id": `control-${event.eventId}` },
          raw: new TextEncoder().encode(control),
        })
        const [, controlRow] = yield* awaitDeliveries(
          id,
          (found) => found.length === 2 && found[1]!.status === "delivered",
        )
        assert.strictEqual(controlRow!.event_id, `control-${event.eventId}`)
        assert.deepStrictEqual(
          receiver.received("/again").map((r) => r.headers["x-webhook-delivery"]),
          [rows[0]!.id, controlRow!.id],
        )
      }).pipe(Effect.scoped),
    )

    it.effect("looks up an event's deliveries still pending again only when the event was redelivered", () =>
      Effect.gen(function* () {
        const { owner: acme, endpointId: id } = yield* receiverEndpoint("acme-redelivered", "/redelivered", [
          "move_out.initiated",
        ])
        const repo = yield* RouterRepo
        const body = JSON.stringify(
          makeEnvelope("move_out.initiated", acme.slug, examplePayload("move_out.initiated")),
        )
        const event = (redelivered: boolean): EventToRoute => ({
          eventId: `redelivered-${id}`,
          event: "move_out.initiated",
          ownerSlug: acme.slug,
          propertyId: null,
          payload: new TextEncoder().encode(body),
          redelivered,
          ...unstamped,
        })
        const now = new Date()
        // Routed by the repository alone, nothing announces the delivery: it stays pending.
        const [made] = yield* repo.route([event(false)], now)
        assert.strictEqual(made?.created, true)
        assert.deepStrictEqual(yield* repo.route([event(false)], now), [])
        assert.deepStrictEqual(yield* repo.route([event(true)], now), [{ ...made!, created: false }])
        yield* query((sql) => sql`update webhook_deliveries set status = 'delivered' where id = ${made!.id}`)
        assert.deepStrictEqual(yield* repo.route([event(true)], now), [])
        assert.strictEqual((yield* deliveriesOf(id)).length, 1)
      }).pipe(Effect.scoped),
    )

    it.effect(
      "attempts a delivery once though its attempt message arrives twice (an event routed again)",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-announced", "/announced", ["move_out.initiated"])
          const body = JSON.stringify(
            makeEnvelope("move_out.initiated", acme.slug, examplePayload("move_out.initiated")),
          )
          // Recorded by a routing that stopped before announcing it: pending, with no attempt message yet.
          const repo = yield* RouterRepo
          const [made] = yield* repo.route(
            [
              {
                eventId: `announced-${id}`,
                event: "move_out.initiated",
                ownerSlug: acme.slug,
                propertyId: null,
                payload: new TextEncoder().encode(body),
                redelivered: false,
                ...unstamped,
              },
            ],
            new Date(),
          )
          // Announced twice, as by two routings of its event: attempt messages carry no Nats-Msg-Id to dedupe them.
          // A control delivery's announcement follows on the same subject: once it is delivered, a second attempt
          // of the first would have been made too.
          const [control] = yield* repo.route(
            [
              {
                eventId: `announced-control-${id}`,
                event: "move_out.initiated",
                ownerSlug: acme.slug,
                propertyId: null,
                payload: new TextEncoder().encode(body),
                redelivered: false,
                ...unstamped,
              },
            ],
            new Date(),
          )
          const nats = yield* Nats
          const announcement = { subject: nats.subject(attemptSubject(id)), data: encodeAttempt(made!) }
          yield* nats.publishAll([
            announcement,
            announcement,
            { subject: nats.subject(attemptSubject(id)), data: encodeAttempt(control!) },
          ])
          const [row] = yield* awaitDeliveries(
            id,
            (rows) => rows.length === 2 && rows.every((r) => r.status === "delivered"),
          )
          assert.strictEqual(row!.id, String(made!.id))
          assert.deepStrictEqual(
            receiver
              .received("/announced")
              .map((r) => r.headers["x-webhook-delivery"])
              .sort(),
            [String(made!.id), String(control!.id)].sort(),
          )
          const attempts = yield* query(
            (sql) => sql`select count(*)::int as n from webhook_attempts where delivery_id = ${made!.id}`,
          )
          assert.strictEqual(attempts[0]!.n, 1)
        }).pipe(Effect.scoped),
    )

    it.effect(
      "announces each new delivery as pending, then its outcome, on webhooks.status.<endpoint_id>",
      () =>
        Effect.gen(function* () {
          const { owner: acme, endpointId: id } = yield* receiverEndpoint("acme-status", "/status", [
            "policy.expired",
          ])
          yield* publishEvent("policy.expired", acme.slug, examplePayload("policy.expired"))
          const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
          const statuses = yield* eventually(statusMessages(id), (messages) => messages.length >= 2)
          assert.deepStrictEqual(
            statuses.map((m) => [m.delivery_id, m.status]),
            [
              [Number(row!.id), "pending"],
              [Number(row!.id), "delivered"],
            ],
          )
        }).pipe(Effect.scoped),
    )
  })
})

/** Status messages of an endpoint the WEBHOOKS stream holds (core publishes on its subjects are stored too). */
const statusMessages = (endpointId: number) =>
  Effect.map(readRawStream("WEBHOOKS"), (messages) =>
    messages
      .filter((m) => m.subject === `webhooks.status.${endpointId}`)
      .map((m) => JSON.parse(m.data.toString("utf8")) as StatusMessage),
  )

const withApi = prospectService({ WEBHOOK_EXTRA_CA_FILE: testCa().caFile, WEBHOOK_BACKOFF_UNIT_MS: "5" })

describe("prospect events from the API", () => {
  layer(withApi.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect(
      "delivers a POSTed prospect's events with the outbox's bytes to the owner, and prospect.ready to a provider covering its property",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const { partner, slug } = yield* prospectSetUp("org-webhook-events", "whsrc")
          const [ids] = yield* query(
            (sql) => sql`
              select o.id as owner_id, p.id as property_id from owners o
              join properties p on p.owner_id = o.id and p.external_system_id = 'prop-1'
              where o.slug = ${slug}`,
          )
          const ownerSub = yield* subscriber({ ownerId: String(ids!.owner_id) })
          const ownerEndpoint = yield* endpoint(ownerSub.id, receiver.url("/owner"), [
            "prospect.created",
            "prospect.ready",
          ])
          const providerSub = yield* subscriber({
            providerId: yield* provider("covers-prop-1", { properties: [String(ids!.property_id)] }),
          })
          const providerEndpoint = yield* endpoint(providerSub.id, receiver.url("/provider"), [
            "prospect.ready",
          ])

          yield* postProspect(partner, slug, completeProspect("whsrc", "p-webhook"))
          yield* awaitProspect(partner, slug, "whsrc", "p-webhook")
          const ownerRows = yield* awaitDeliveries(
            ownerEndpoint,
            (rows) => rows.length === 2 && rows.every((r) => r.status === "delivered"),
          )
          const [providerRow] = yield* awaitDeliveries(
            providerEndpoint,
            (rows) => rows[0]?.status === "delivered",
          )

          const published = yield* query(
            (sql) => sql<Array<{ subject: string; payload: Buffer; id: string }>>`
              select subject, payload, id::text as id from outbox where subject like ${`events.${slug}.%`}`,
          )
          assert.sameMembers(
            published.map((m) => m.subject),
            [`events.${slug}.prospect.created`, `events.${slug}.prospect.ready`],
          )
          const created = receiver
            .received("/owner")
            .find((r) => r.headers["x-webhook-event"] === "prospect.created")!
          assert.strictEqual(
            created.body.toString(),
            JSON.stringify({
              event: "prospect.created",
              property_owner_slug: slug,
              data: { third_party_prospect: { id: "p-webhook" } },
            }),
          )
          for (const message of published) {
            const row = ownerRows.find((r) => r.event_id === message.id)
            assert.isDefined(row, message.subject)
            assert.isTrue(row!.payload.equals(message.payload), `${message.subject}: stored bytes differ`)
            const request = receiver
              .received("/owner")
              .find((r) => r.headers["x-webhook-delivery"] === row!.id)!
            assert.isTrue(request.body.equals(message.payload), `${message.subject}: sent bytes differ`)
            assert.deepStrictEqual(
              verifySignature(request.headers, request.body, [ownerSub.secret]).verifiedBy,
              [ownerSub.secret],
            )
          }
          const ready = published.find((m) => m.subject.endsWith("prospect.ready"))!
          assert.strictEqual(providerRow!.event_id, ready.id)
          const [toProvider] = receiver.received("/provider")
          assert.isTrue(toProvider!.body.equals(ready.payload))
          assert.deepStrictEqual(
            verifySignature(toProvider!.headers, toProvider!.body, [providerSub.secret]).verifiedBy,
            [providerSub.secret],
          )
        }).pipe(Effect.scoped, Effect.provide(Crypto.layer)),
    )
  })
})

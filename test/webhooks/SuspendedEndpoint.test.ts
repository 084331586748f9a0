import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Db } from "../../backend/platform/Db.ts"
import { statementCounter } from "../bench/Statements.ts"
import {
  attemptsOf,
  awaitDeliveries,
  deliveriesOf,
  endpoint,
  engineService,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

const engine = engineService()

const heldSince = (deliveryId: string) =>
  query(
    (sql) => sql<Array<{ held_since: Date | null }>>`
      select held_since from webhook_deliveries where id = ${deliveryId}`,
  ).pipe(Effect.map(([row]) => row?.held_since ?? null))

const setStatus = (endpointId: number, status: string) =>
  query((sql) => sql`update webhook_endpoints set status = ${status} where id = ${endpointId}`)

/** A delivery whose first attempt got a 503 asking for a second's wait, and whose endpoint was then suspended. */
const heldDelivery = (slug: string, path: string) =>
  Effect.gen(function* () {
    const { receiver, owner, subscriber, endpointId } = yield* receiverEndpoint(slug, path, [
      "policy.created",
    ])
    receiver.respond(path, (_, index) =>
      index === 0 ? { status: 503, headers: { "retry-after": "1" } } : { status: 200 },
    )
    yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
    const [retrying] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.status === "retrying")
    yield* setStatus(endpointId, "suspended")
    // Its second attempt comes due while the endpoint is suspended.
    const [held] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.next_retry_at === null)
    return { receiver, owner, subscriber, endpointId, delivery: retrying!.id, held: held! }
  })

describe("deliveries of a suspended endpoint", () => {
  layer(engine.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "holds a delivery waiting for retry, without a request, and sends it once the endpoint is active",
      () =>
        Effect.gen(function* () {
          const { receiver, owner, subscriber, endpointId, delivery, held } = yield* heldDelivery(
            "acme-suspended",
            "/suspended",
          )
          assert.deepStrictEqual([held.status, held.attempt_number], ["retrying", 2])
          const since = yield* heldSince(delivery)
          assert.isNotNull(since)
          // Held, not failed: nothing changes while the endpoint stays suspended. A control delivery of an active
          // endpoint, asked to retry after a second once this one was held, goes the way a retry goes (the
          // scheduler's pass, which also releases held deliveries, then an attempt): once it is delivered, such a
          // pass has been made since.
          const control = yield* endpoint(subscriber.id, receiver.url("/suspended-control"), [
            "policy.updated",
          ])
          receiver.respond("/suspended-control", (_, index) =>
            index === 0 ? { status: 503, headers: { "retry-after": "1" } } : { status: 200 },
          )
          yield* publishEvent("policy.updated", owner.slug, examplePayload("policy.updated"))
          yield* awaitDeliveries(control, (rows) => rows[0]?.status === "delivered")
          const [still] = yield* deliveriesOf(endpointId)
          assert.deepStrictEqual([still!.status, still!.attempt_number], ["retrying", 2])
          assert.deepStrictEqual(yield* heldSince(delivery), since)
          assert.strictEqual(receiver.received("/suspended").length, 1)

          yield* setStatus(endpointId, "active")
          const [done] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.status === "delivered")
          assert.strictEqual(done!.attempt_number, 2)
          assert.isNull(yield* heldSince(delivery))
          assert.deepStrictEqual(
            (yield* attemptsOf(delivery)).map((a) => [a.attempt_number, a.status_code]),
            [
              [1, 503],
              [2, 200],
            ],
          )
          assert.strictEqual(receiver.received("/suspended").length, 2)
        }).pipe(Effect.scoped),
    )

    it.effect(
      "records an event for a suspended endpoint as a held delivery, sends nothing, and delivers it once active",
      () =>
        Effect.gen(function* () {
          const { receiver, owner, subscriber, endpointId } = yield* receiverEndpoint(
            "acme-paused",
            "/paused",
            ["policy.created"],
          )
          yield* setStatus(endpointId, "suspended")
          // An active control endpoint subscribed too: its delivery is announced with the held one's, were that
          // announced, so once the control's is delivered a request for the held one would have been made.
          const control = yield* endpoint(subscriber.id, receiver.url("/paused-control"), ["policy.created"])
          const event = yield* publishEvent("policy.created", owner.slug, examplePayload("policy.created"))
          const [held] = yield* awaitDeliveries(endpointId, (rows) => rows.length === 1)
          assert.deepStrictEqual(
            [held!.status, held!.attempt_number, held!.next_retry_at],
            ["pending", 1, null],
          )
          assert.isNotNull(yield* heldSince(held!.id))
          yield* awaitDeliveries(control, (rows) => rows[0]?.status === "delivered")
          assert.strictEqual(receiver.received("/paused").length, 0)
          assert.deepStrictEqual(yield* attemptsOf(held!.id), [])

          yield* setStatus(endpointId, "active")
          const [done] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.status === "delivered")
          assert.strictEqual(done!.id, held!.id)
          assert.isNull(yield* heldSince(held!.id))
          const [request] = receiver.received("/paused")
          assert.strictEqual(request!.body.toString("utf8"), event.body)
          assert.strictEqual(request!.headers["x-webhook-delivery"], held!.id)
          assert.strictEqual(receiver.received("/paused").length, 1)
        }).pipe(Effect.scoped),
    )

    it.effect("reads the subscriber's secrets once for the held deliveries it sends together", () =>
      Effect.gen(function* () {
        const { receiver, owner, endpointId } = yield* receiverEndpoint("acme-secret-reads", "/reads", [
          "policy.created",
        ])
        yield* setStatus(endpointId, "suspended")
        yield* Effect.forEach(Array.from({ length: 8 }), () =>
          publishEvent("policy.created", owner.slug, examplePayload("policy.created")),
        )
        yield* awaitDeliveries(endpointId, (rows) => rows.length === 8)
        // Released together, their attempts are claimed together and find no secrets cached for the subscriber.
        const statements = statementCounter(yield* Db)
        yield* setStatus(endpointId, "active")
        yield* awaitDeliveries(endpointId, (rows) => rows.every((r) => r.status === "delivered"))
        statements.stop()
        assert.strictEqual(statements.countOf("secret_sealed"), 1)
        assert.strictEqual(receiver.received("/reads").length, 8)
      }).pipe(Effect.scoped),
    )

    it.effect("fails a held delivery with the reason once its endpoint is disabled", () =>
      Effect.gen(function* () {
        const { receiver, endpointId, delivery } = yield* heldDelivery("acme-disabled", "/disabled")
        yield* setStatus(endpointId, "disabled")
        const [failed] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.status === "failed")
        assert.strictEqual(failed!.last_attempt_failure_reason, "Endpoint is disabled")
        assert.strictEqual(failed!.attempt_number, 2)
        assert.isNull(yield* heldSince(delivery))
        assert.strictEqual(receiver.received("/disabled").length, 1)
      }).pipe(Effect.scoped),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Deliveries } from "../../backend/operator/DeliveryQueries.ts"
import { startReceiver } from "../support/Receiver.ts"
import { storedAt } from "../support/Streams.ts"
import {
  attemptsOf,
  awaitDeliveries,
  endpoint,
  engineService,
  examplePayload,
  owner,
  publishEvent,
  query,
  subscriber,
  verifySignature,
} from "../support/WebhookEngine.ts"

const engine = engineService()

/** The headers the detail shows a value for (a custom header's is masked as null). */
const shownValues = (headers: Readonly<Record<string, string | null>>) =>
  Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== null))
const testLayer = Deliveries.layer.pipe(Layer.provideMerge(engine.layer))

describe("operator delivery detail", () => {
  layer(testLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "shows the exact payload, the headers the last attempt sent with custom header values masked, and every attempt; retry sends it again",
      () =>
        Effect.gen(function* () {
          const deliveries = yield* Deliveries
          const receiver = yield* startReceiver
          const acme = yield* owner("acme-detail")
          const sub = yield* subscriber({ ownerId: acme.id }, { "X-Partner-Key": "k-123" })
          const endpointId = yield* endpoint(sub.id, receiver.url("/detail"), ["policy.created"])
          let failing = true
          receiver.respond("/detail", (_, index) =>
            index === 0 ? { status: 500, body: "boom" } : failing ? { status: 503 } : { status: 200 },
          )
          const event = yield* publishEvent("policy.created", acme.slug, examplePayload("policy.created"))
          yield* awaitDeliveries(endpointId, (rows) => rows[0]?.attempt_number === 3)
          failing = false
          const [row] = yield* awaitDeliveries(endpointId, (rows) => rows[0]?.status === "delivered")

          const detail = yield* deliveries.detail(row!.id)
          const sent = receiver.received("/detail")
          const last = sent[sent.length - 1]!
          assert.strictEqual(detail.payload_raw, event.body)
          assert.strictEqual(detail.payload_raw, last.body.toString("utf8"))
          assert.deepStrictEqual(detail.payload, JSON.parse(event.body))
          assert.strictEqual(detail.status, "delivered")
          assert.strictEqual(detail.last_status_code, 200)
          for (const name of [
            "content-type",
            "x-webhook-event",
            "x-webhook-delivery",
            "x-webhook-timestamp",
            "x-webhook-signature",
          ]) {
            assert.strictEqual(detail.request_headers[name], last.headers[name], name)
          }
          assert.strictEqual(last.headers["x-partner-key"], "k-123")
          assert.isNull(detail.request_headers["x-partner-key"])
          assert.notInclude(JSON.stringify(detail), "k-123")
          assert.deepStrictEqual(
            verifySignature(shownValues(detail.request_headers), last.body, [sub.secret]).verifiedBy,
            [sub.secret],
          )
          assert.notInclude(JSON.stringify(detail), sub.secret)
          assert.deepStrictEqual(
            detail.attempts.map((a) => [a.series, a.attempt_number, a.status_code]),
            sent.map((_, i) => [1, i + 1, i === 0 ? 500 : i === sent.length - 1 ? 200 : 503]),
          )
          assert.strictEqual(detail.attempts[0]!.response_excerpt, "boom")
          // The timeline: an event published straight to JetStream (not through the outbox) has no acceptance or
          // commit on record; then published when the stream stored it, routed at the delivery's creation,
          // attempted at its first attempt, then delivered.
          const published = (yield* storedAt("EVENTS", event.seq)).toISOString()
          const routed = detail.created_at
          const attempted = detail.attempts[0]!.started_at
          const delivered = detail.delivered_at!
          const ms = (from: string, to: string) => Date.parse(to) - Date.parse(from)
          assert.deepStrictEqual(detail.timeline, [
            { step: "accepted", at: null, after_ms: null },
            { step: "committed", at: null, after_ms: null },
            { step: "published", at: published, after_ms: null },
            { step: "routed", at: routed, after_ms: ms(published, routed) },
            { step: "attempted", at: attempted, after_ms: ms(routed, attempted) },
            { step: "delivered", at: delivered, after_ms: ms(attempted, delivered) },
          ])
          assert.isAbove(Date.parse(delivered), Date.parse(attempted))

          const retried = yield* deliveries.retry(String(row!.id))
          assert.strictEqual(retried.id, Number(row!.id))
          yield* awaitDeliveries(
            endpointId,
            (rows) => rows[0]?.series === 2 && rows[0]?.status === "delivered",
          )
          const again = yield* deliveries.detail(Number(row!.id))
          assert.deepStrictEqual(
            again.attempts.map((a) => [a.series, a.attempt_number]),
            (yield* attemptsOf(row!.id)).map((a) => [a.series, a.attempt_number]),
          )
          assert.deepStrictEqual(again.attempts[again.attempts.length - 1]!.series, 2)
          assert.strictEqual(
            again.request_headers["x-webhook-signature"],
            receiver.received("/detail").at(-1)!.headers["x-webhook-signature"],
          )
        }).pipe(Effect.scoped),
    )

    it.effect("signs a delivery never attempted as it would be signed now, and 404s an unknown id", () =>
      Effect.gen(function* () {
        const deliveries = yield* Deliveries
        const acme = yield* owner("acme-unsent")
        const sub = yield* subscriber({ ownerId: acme.id })
        const endpointId = yield* endpoint(
          sub.id,
          "https://unsent.example/hooks",
          ["policy.created"],
          "suspended",
        )
        const [row] = yield* query(
          (sql) => sql`
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, held_since)
            values (${endpointId}, 'e-unsent', 'policy.created', ${acme.slug}, convert_to('{"a": 1}', 'UTF8'), now())
            returning id`,
        )
        const detail = yield* deliveries.detail(String(row!.id))
        assert.strictEqual(detail.status, "held")
        assert.deepStrictEqual(detail.attempts, [])
        assert.strictEqual(detail.payload_raw, '{"a": 1}')
        assert.deepStrictEqual(
          verifySignature(shownValues(detail.request_headers), Buffer.from('{"a": 1}'), [sub.secret])
            .verifiedBy,
          [sub.secret],
        )
        for (const id of ["999999", "0", "abc", "1e3"]) {
          assert.strictEqual((yield* Effect.flip(deliveries.detail(id)))._tag, "DeliveryNotFound")
          assert.strictEqual((yield* Effect.flip(deliveries.retry(id)))._tag, "DeliveryNotFound")
        }
      }),
    )
  })
})

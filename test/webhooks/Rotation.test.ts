import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  addSecret,
  awaitDeliveries,
  engineService,
  publishEvent,
  query,
  verifySignature,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

const service = engineService()

describe("signing secret rotation", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "signs with every active secret during the overlap, newest first, so either secret verifies; then with the new one",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            subscriber: sub,
            endpointId: id,
          } = yield* receiverEndpoint("acme-rotation", "/rotating", ["prospect.created"])
          const send = (n: number) =>
            Effect.gen(function* () {
              yield* publishEvent("prospect.created", acme.slug, { id: `p-${n}` })
              yield* awaitDeliveries(
                id,
                (rows) => rows.length === n && rows.every((r) => r.status === "delivered"),
              )
              return receiver.received("/rotating")[n - 1]!
            })

          const before = yield* send(1)
          const old = sub.secret
          assert.deepStrictEqual(verifySignature(before.headers, before.body, [old]).verifiedBy, [old])

          // A rotation as the operators' command makes it: a new secret, the older one expiring after the overlap.
          yield* query(
            (sql) => sql`
              update webhook_secrets set expires_at = now() + interval '1 hour'
              where subscriber_id = ${sub.id} and expires_at is null`,
          )
          const fresh = yield* addSecret(sub.id)
          const during = yield* send(2)
          const check = verifySignature(during.headers, during.body, [fresh, old])
          assert.match(during.headers["x-webhook-signature"] ?? "", /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/)
          assert.strictEqual(check.signatures.length, 2)
          assert.deepStrictEqual(check.verifiedBy, [fresh, old], "both secrets verify")
          // Newest first: a receiver holding only the new secret finds it in the first v1.
          assert.deepStrictEqual(
            verifySignature(
              { "x-webhook-signature": `t=${check.timestamp},v1=${check.signatures[0]}` },
              during.body,
              [fresh],
            ).verifiedBy,
            [fresh],
          )
          assert.deepStrictEqual(verifySignature(during.headers, during.body, [old]).verifiedBy, [old])

          // The overlap ends.
          yield* query(
            (sql) => sql`
              update webhook_secrets set expires_at = now() - interval '1 second'
              where subscriber_id = ${sub.id} and expires_at is not null`,
          )
          const after = yield* send(3)
          const last = verifySignature(after.headers, after.body, [fresh, old])
          assert.strictEqual(last.signatures.length, 1)
          assert.deepStrictEqual(last.verifiedBy, [fresh])
        }).pipe(Effect.scoped),
    )
  })
})

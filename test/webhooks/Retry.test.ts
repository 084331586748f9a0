import { randomUUID } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { backoffUnits } from "../../backend/webhooks/delivery/Backoff.ts"
import {
  attemptsOf,
  awaitDeliveries,
  engineService,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
  verifySignature,
} from "../support/WebhookEngine.ts"

/** A quarter millisecond: the whole schedule (54,492 units) takes under 14 s. */
const UNIT_MS = 0.25
const service = engineService({ WEBHOOK_BACKOFF_UNIT_MS: String(UNIT_MS) })

describe("retry schedule", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "retries after min(2^k, 3600) units before attempt k, and fails after the 25th attempt for good",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            subscriber: sub,
            endpointId: id,
          } = yield* receiverEndpoint("acme-schedule", "/down", ["policy.created"])
          receiver.respond("/down", () => ({ status: 500, body: "down" }))
          yield* publishEvent("policy.created", acme.slug, examplePayload("policy.created"))
          const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "failed")
          assert.strictEqual(row!.attempt_number, 25)
          assert.isNull(row!.next_retry_at)
          assert.strictEqual(row!.last_attempt_failure_reason, "Destination answered 500")

          const attempts = yield* attemptsOf(row!.id)
          assert.deepStrictEqual(
            attempts.map((a) => a.attempt_number),
            Array.from({ length: 25 }, (_, i) => i + 1),
          )
          const requests = receiver.received("/down")
          const arrivals = requests.map((r) => r.at)
          assert.strictEqual(arrivals.length, 25)
          // Every attempt is signed anew, with the second it started at, and verifies (by an HMAC of our own).
          assert.deepStrictEqual(
            requests.map((r) => {
              const check = verifySignature(r.headers, r.body, [sub.secret])
              return [check.timestamp, r.headers["x-webhook-timestamp"], check.verifiedBy]
            }),
            attempts.map((a) => {
              const startedAt = String(Math.floor(a.started_at.getTime() / 1000))
              return [startedAt, startedAt, [sub.secret]]
            }),
          )
          const late: Array<string> = []
          for (let k = 2; k <= 25; k++) {
            const expected = backoffUnits(k) * UNIT_MS
            const gap = arrivals[k - 1]! - arrivals[k - 2]!
            // Never early (the millisecond resolution of the stored time aside). Late only by what a loaded machine
            // adds (a stall of 2.5 s seen with the hypervisor stealing a third of the CPU time), and short of what a
            // missing cap would give from attempt 15 on (2^15 units and up, over 8 s).
            if (gap < expected - 1.5 || gap > 2 * expected + 3000) {
              late.push(`attempt ${k}: ${gap.toFixed(1)} ms after the previous, expected ${expected} ms`)
            }
          }
          assert.deepStrictEqual(late, [])
          yield* Effect.sleep("500 millis")
          assert.strictEqual(receiver.received("/down").length, 25, "an attempt after the 25th")
        }).pipe(Effect.scoped),
    )

    it.effect(
      "makes the next attempt of a delivery whose claim's lease ran out and whose message is gone once the scheduler " +
        "publishes it again, recording the abandoned one as unknown, and not one whose lease still holds",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-lease", "/lease", ["policy.created"])
          const body = JSON.stringify({ event: "policy.created", property_owner_slug: acme.slug, data: {} })
          // As a process leaves an attempt when it dies in the middle of it and its message is lost too: due and
          // published six minutes ago, claimed, the lease just ended. The other one's process is still at it.
          const rows = yield* query(
            (sql) => sql`
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, attempt_number,
                                            next_retry_at, dispatched_at, lease_until)
            values (${id}, 'lost-event', 'policy.created', ${acme.slug}, convert_to(${body}, 'UTF8'), 'retrying', 3,
                    now() - interval '6 minutes', now() - interval '6 minutes', now() - interval '1 second'),
                   (${id}, 'held-event', 'policy.created', ${acme.slug}, convert_to(${body}, 'UTF8'), 'retrying', 2,
                    now() - interval '6 minutes', now() - interval '6 minutes', now() + interval '1 minute')
            returning id`,
          )
          yield* query((sql) => sql`select pg_notify('webhook_due', '')`)
          const [done] = yield* awaitDeliveries(id, (found) => found[0]?.status === "delivered")
          assert.strictEqual(done!.attempt_number, 4)
          assert.deepStrictEqual(
            (yield* attemptsOf(done!.id)).map((a) => [a.attempt_number, a.status_code, a.failure_reason]),
            [
              [3, null, "The process stopped during the attempt; its outcome is unknown"],
              [4, 200, null],
            ],
          )
          // Published too (due, six minutes without an outcome), its claim refused while the lease holds.
          yield* Effect.sleep("1 second")
          const requests = receiver.received("/lease")
          assert.strictEqual(requests.length, 1)
          assert.strictEqual(requests[0]!.headers["x-webhook-delivery"], String(rows[0]!.id))
          assert.strictEqual(requests[0]!.body.toString(), body)
          // Read after the wait: published again first, and still where it was.
          const [heldNow] = yield* query(
            (sql) => sql<Array<{ recent: boolean; status: string; attempt_number: number }>>`
              select dispatched_at > now() - interval '1 minute' as recent, status, attempt_number
              from webhook_deliveries where id = ${rows[1]!.id}`,
          )
          assert.isTrue(heldNow!.recent, "the held one was published again")
          assert.deepStrictEqual([heldNow!.status, heldNow!.attempt_number], ["retrying", 2])
          assert.deepStrictEqual(yield* attemptsOf(String(rows[1]!.id)), [])
        }).pipe(Effect.scoped),
    )

    it.effect(
      "takes over a claim whose process stopped renewing its presence before its lease runs out, and not one whose " +
        "process is alive",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-claimer", "/claimer", ["policy.created"])
          const body = JSON.stringify({ event: "policy.created", property_owner_slug: acme.slug, data: {} })
          // Both claimed with a minute of lease left, their messages back (published again by the scheduler): one
          // by a process that was killed (its presence ran out a second ago), one by a process still at it.
          const [dead, alive] = [randomUUID(), randomUUID()]
          yield* query(
            (sql) => sql`
            insert into webhook_claimers (id, alive_until)
            values (${dead}, now() - interval '1 second'), (${alive}, now() + interval '1 minute')`,
          )
          const rows = yield* query(
            (sql) => sql`
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, attempt_number,
                                            next_retry_at, dispatched_at, lease_until, claimed_by)
            values (${id}, 'killed-claimer', 'policy.created', ${acme.slug}, convert_to(${body}, 'UTF8'), 'retrying',
                    2, now() - interval '6 minutes', now() - interval '6 minutes', now() + interval '1 minute',
                    ${dead}),
                   (${id}, 'live-claimer', 'policy.created', ${acme.slug}, convert_to(${body}, 'UTF8'), 'retrying',
                    2, now() - interval '6 minutes', now() - interval '6 minutes', now() + interval '1 minute',
                    ${alive})
            returning id`,
          )
          yield* query((sql) => sql`select pg_notify('webhook_due', '')`)
          const [done] = yield* awaitDeliveries(id, (found) =>
            found.some((row) => row.id === String(rows[0]!.id) && row.status === "delivered"),
          ).pipe(Effect.map((found) => found.filter((row) => row.id === String(rows[0]!.id))))
          assert.strictEqual(done!.attempt_number, 3)
          assert.deepStrictEqual(
            (yield* attemptsOf(done!.id)).map((a) => [a.attempt_number, a.status_code, a.failure_reason]),
            [
              [2, null, "The process stopped during the attempt; its outcome is unknown"],
              [3, 200, null],
            ],
          )
          // The live claimer's attempt is left to it, and the service's own claim names the service's presence.
          yield* Effect.sleep("1 second")
          assert.deepStrictEqual(
            receiver.received("/claimer").map((r) => r.headers["x-webhook-delivery"]),
            [String(rows[0]!.id)],
          )
          const claims = yield* query(
            (sql) => sql<Array<{ id: string; claimed_by: string; alive: boolean }>>`
              select d.id::text, d.claimed_by::text, c.alive_until > now() as alive
              from webhook_deliveries d left join webhook_claimers c on c.id = d.claimed_by
              where d.id in ${sql([rows[0]!.id, rows[1]!.id])} order by d.id`,
          )
          assert.notStrictEqual(claims[0]!.claimed_by, dead)
          assert.isTrue(claims[0]!.alive, "the taking process renews its presence")
          assert.deepStrictEqual([claims[1]!.claimed_by, claims[1]!.alive], [alive, true])
          assert.deepStrictEqual(yield* attemptsOf(String(rows[1]!.id)), [])
        }).pipe(Effect.scoped),
    )

    it.effect(
      "makes the first attempt of a new delivery whose attempt message was lost, once it waited an hour unclaimed",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-unclaimed", "/unclaimed", ["policy.created"])
          const body = JSON.stringify({ event: "policy.created", property_owner_slug: acme.slug, data: {} })
          // As the router leaves them (pending, announced), their attempt messages gone: one announced two hours
          // ago, one half an hour ago (its message may still be on its way, behind a backlog).
          const rows = yield* query(
            (sql) => sql`
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, dispatched_at)
            values (${id}, 'lost-long-ago', 'policy.created', ${acme.slug}, convert_to(${body}, 'UTF8'),
                    now() - interval '2 hours'),
                   (${id}, 'lost-just-now', 'policy.created', ${acme.slug}, convert_to(${body}, 'UTF8'),
                    now() - interval '30 minutes')
            returning id`,
          )
          yield* query((sql) => sql`select pg_notify('webhook_due', '')`)
          yield* awaitDeliveries(id, (found) => found[0]?.status === "delivered")
          // Two scheduler rounds (it polls every 2 s) later, the recent one is still waiting for its own message.
          yield* Effect.sleep("4500 millis")
          const [longAgo, justNow] = yield* awaitDeliveries(id, () => true)
          assert.deepStrictEqual(
            [longAgo!.status, longAgo!.attempt_number, justNow!.status],
            ["delivered", 1, "pending"],
          )
          assert.deepStrictEqual(
            receiver.received("/unclaimed").map((r) => r.headers["x-webhook-delivery"]),
            [String(rows[0]!.id)],
          )
        }).pipe(Effect.scoped),
    )

    it.effect(
      "attempts a delivery re-enqueued as the retry route does: a new series from attempt 1, same delivery id",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-requeue", "/requeue", ["policy.updated"])
          yield* publishEvent("policy.updated", acme.slug, examplePayload("policy.updated"))
          const [row] = yield* awaitDeliveries(id, (rows) => rows[0]?.status === "delivered")
          yield* query(
            (sql) => sql`
              update webhook_deliveries
              set series = series + 1, attempt_number = 1, status = 'pending', next_retry_at = now()
              where id = ${row!.id}`,
          )
          yield* query((sql) => sql`select pg_notify('webhook_due', '')`)
          const [again] = yield* awaitDeliveries(
            id,
            (rows) => rows[0]?.status === "delivered" && rows[0].series === 2,
          )
          assert.strictEqual(again!.attempt_number, 1)
          const requests = receiver.received("/requeue")
          assert.strictEqual(requests.length, 2)
          assert.deepStrictEqual(
            requests.map((r) => r.headers["x-webhook-delivery"]),
            [row!.id, row!.id],
          )
          assert.strictEqual(requests[0]!.body.toString(), requests[1]!.body.toString())
          assert.deepStrictEqual(
            (yield* attemptsOf(row!.id)).map((a) => [a.series, a.attempt_number]),
            [
              [1, 1],
              [2, 1],
            ],
          )
        }).pipe(Effect.scoped),
    )
  })
})

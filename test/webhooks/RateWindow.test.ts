import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { RATE_LIMIT_DELAY_UNITS } from "../../backend/webhooks/Backoff.ts"
import type { StatusMessage } from "../../backend/webhooks/Messages.ts"
import { eventually, readStream } from "../support/Streams.ts"
import {
  attemptsOf,
  awaitDeliveries,
  deliveriesOf,
  engineService,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

const LIMIT = 5
const windowed = engineService({ WEBHOOK_RATE_LIMIT_PER_MINUTE: String(LIMIT) })

/** Milliseconds until the next clock minute. */
const untilNextMinute = () => 60_000 - (Date.now() % 60_000)

describe("the webhook rate limit's window", () => {
  layer(windowed.layer, { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.effect(
      "lets at most the limit through in any 60 seconds, across a clock minute's end, and the rest after",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-window", "/window", ["delinquency.resolved"])
          // The first burst 10 to 25 seconds before a clock minute ends, the second just after it ended: both
          // within one window of 60 seconds, in two clock minutes.
          const left = untilNextMinute()
          if (left > 25_000) yield* Effect.sleep(left - 25_000)
          else if (left < 10_000) yield* Effect.sleep(left + 35_000)
          const minuteEnds = Date.now() + untilNextMinute()
          const burst = () =>
            Effect.forEach(
              Array.from({ length: LIMIT }, (_, i) => i),
              () => publishEvent("delinquency.resolved", acme.slug, examplePayload("delinquency.resolved")),
              { concurrency: "unbounded" },
            )
          yield* burst()
          yield* awaitDeliveries(
            id,
            (rows) => rows.length === LIMIT && rows.every((r) => r.status === "delivered"),
          )
          const wait = minuteEnds + 1000 - Date.now()
          if (wait > 0) yield* Effect.sleep(wait)
          yield* burst()
          const held = yield* awaitDeliveries(
            id,
            (rows) => rows.length === 2 * LIMIT && rows.slice(LIMIT).every((r) => r.status !== "pending"),
          )
          assert.deepStrictEqual(
            held.slice(LIMIT).map((r) => [r.status, r.attempt_number]),
            Array.from({ length: LIMIT }, () => ["rate_limited", 1]),
          )
          assert.strictEqual(receiver.received("/window").length, LIMIT)

          const rows = yield* awaitDeliveries(id, (rows) => rows.every((r) => r.status === "delivered"))
          const started: Array<number> = []
          for (const row of rows) {
            const attempts = yield* attemptsOf(row.id)
            assert.deepStrictEqual(
              attempts.map((a) => [a.attempt_number, a.status_code]),
              [[1, 200]],
            )
            started.push(attempts[0]!.started_at.getTime())
          }
          started.sort((a, b) => a - b)
          // The (LIMIT + 1)-th attempt after any attempt starts a full window later (the clock's millisecond
          // aside: the window counts whole seconds, and the later attempt's start is read after its claim).
          for (let i = 0; i + LIMIT < started.length; i++) {
            assert.isAtLeast(
              started[i + LIMIT]! - started[i]!,
              59_000,
              `attempts ${i + 1} and ${i + LIMIT + 1}`,
            )
          }
        }).pipe(Effect.scoped),
      240_000,
    )

    it.effect(
      "tries a rate_limited delivery again 60 backoff units after it was limited, without using an attempt",
      () =>
        Effect.gen(function* () {
          const { owner: acme, endpointId: id } = yield* receiverEndpoint("acme-again", "/again", [
            "delinquency.created",
          ])
          // Fill the endpoint's window, so the delivery below is limited at every try for a minute.
          yield* query(
            (sql) => sql`
              insert into webhook_rate_limits (endpoint_id, latest_second, counts, total, granted)
              select ${id}, t.new_latest, t.new_counts, t.new_total, t.granted
              from webhook_rate_take(array_fill(0, array[61]), 0, floor(extract(epoch from now()))::bigint,
                                     floor(extract(epoch from now()))::bigint, ${LIMIT}, ${LIMIT}) t`,
          )
          yield* publishEvent("delinquency.created", acme.slug, examplePayload("delinquency.created"))
          const limited = yield* eventually(
            readStream("WEBHOOKS").pipe(
              Effect.map((messages) =>
                messages
                  .filter((m) => m.subject === `webhooks.status.${id}`)
                  .map((m) => m.json as StatusMessage)
                  .filter((s) => s.status === "rate_limited"),
              ),
            ),
            (found) => found.length >= 2,
          )
          const unitMs = Number(windowed.env.WEBHOOK_BACKOFF_UNIT_MS)
          const [first, second] = limited
          assert.strictEqual(
            Date.parse(first!.next_retry_at!) - Date.parse(first!.at),
            RATE_LIMIT_DELAY_UNITS * unitMs,
          )
          assert.strictEqual(RATE_LIMIT_DELAY_UNITS, 60)
          assert.isAtLeast(Date.parse(second!.at), Date.parse(first!.next_retry_at!), "tried again early")
          assert.deepStrictEqual(
            limited.map((s) => s.attempt_number),
            limited.map(() => 1),
          )
          const [row] = yield* deliveriesOf(id)
          assert.strictEqual(row!.status, "rate_limited")
          assert.strictEqual(row!.attempt_number, 1)
          assert.deepStrictEqual(yield* attemptsOf(row!.id), [])
        }).pipe(Effect.scoped),
      60_000,
    )
  })
})

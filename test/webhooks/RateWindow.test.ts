import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { RATE_LIMIT_DELAY_UNITS } from "../../backend/webhooks/delivery/Backoff.ts"
import type { StatusMessage } from "../../backend/webhooks/delivery/Messages.ts"
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
/** The engine's time unit: the limit counts over any 60 units (a minute in production) and waits 60 units. */
const UNIT_MS = 200
const WINDOW_MS = 60 * UNIT_MS
const windowed = engineService({
  WEBHOOK_RATE_LIMIT_PER_MINUTE: String(LIMIT),
  WEBHOOK_BACKOFF_UNIT_MS: String(UNIT_MS),
})

/** Milliseconds until the next whole window of the clock (a clock minute in production). */
const untilNextWindow = () => WINDOW_MS - (Date.now() % WINDOW_MS)

describe("the webhook rate limit's window", () => {
  layer(windowed.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "lets at most the limit through in any 60 units, across a clock window's end, and the rest after",
      () =>
        Effect.gen(function* () {
          const {
            receiver,
            owner: acme,
            endpointId: id,
          } = yield* receiverEndpoint("acme-window", "/window", ["delinquency.resolved"])
          // The first burst 25 to 40 units before a clock window ends, the second 4 units after it ended: both
          // within one sliding window of 60 units, in two clock windows.
          const left = untilNextWindow()
          if (left > 40 * UNIT_MS) yield* Effect.sleep(left - 40 * UNIT_MS)
          else if (left < 25 * UNIT_MS) yield* Effect.sleep(left + 20 * UNIT_MS)
          const windowEnds = Date.now() + untilNextWindow()
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
          const wait = windowEnds + 4 * UNIT_MS - Date.now()
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
          // The (LIMIT + 1)-th attempt after any attempt starts a full window later (less one unit: the window
          // counts whole units, and the later attempt's start is read after its claim).
          for (let i = 0; i + LIMIT < started.length; i++) {
            assert.isAtLeast(
              started[i + LIMIT]! - started[i]!,
              WINDOW_MS - UNIT_MS,
              `attempts ${i + 1} and ${i + LIMIT + 1}`,
            )
          }
        }).pipe(Effect.scoped),
      120_000,
    )

    it.effect(
      "tries a rate_limited delivery again 60 backoff units after it was limited, without using an attempt",
      () =>
        Effect.gen(function* () {
          const { owner: acme, endpointId: id } = yield* receiverEndpoint("acme-again", "/again", [
            "delinquency.created",
          ])
          // Fill the endpoint's window in a unit 30 units ahead (as a process whose clock runs ahead would), so
          // the delivery below is limited at its first try and at the next, 60 units later.
          const ahead = Math.floor(Date.now() / UNIT_MS) + 30
          yield* query(
            (sql) => sql`
              insert into webhook_rate_limits (endpoint_id, latest_second, counts, total, granted)
              select ${id}, t.new_latest, t.new_counts, t.new_total, t.granted
              from webhook_rate_take(array_fill(0, array[61]), 0, ${ahead}::bigint, ${ahead}::bigint,
                                     ${LIMIT}, ${LIMIT}) t`,
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
          const [first, second] = limited
          assert.strictEqual(
            Date.parse(first!.next_retry_at!) - Date.parse(first!.at),
            RATE_LIMIT_DELAY_UNITS * UNIT_MS,
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

    it.effect("counts slots past 2^31, as epoch seconds will be from January 2038", () =>
      Effect.gen(function* () {
        const start = 2 ** 31 + 10
        const take = (counts: string, total: number, latest: number, now: number, wanted: number) =>
          Effect.map(
            query(
              (sql) => sql<Array<{ new_counts: Array<number>; new_total: number; granted: number }>>`
                select new_counts, new_total, granted
                from webhook_rate_take(${counts}::int[], ${total}, ${latest}::bigint, ${now}::bigint,
                                       ${wanted}, ${LIMIT})`,
            ),
            ([row]) => row!,
          )
        const first = yield* take(`{${Array(61).fill(0).join(",")}}`, 0, start, start, LIMIT)
        assert.strictEqual(first.granted, LIMIT)
        const filled = `{${first.new_counts.join(",")}}`
        assert.strictEqual((yield* take(filled, LIMIT, start, start + 60, 3)).granted, 0, "60 slots later")
        const later = yield* take(filled, LIMIT, start, start + 61, 3)
        assert.deepStrictEqual([later.granted, later.new_total], [3, 3], "61 slots later")
      }),
    )
  })
})

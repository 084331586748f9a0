import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { startReceiver } from "../support/Receiver.ts"
import {
  attemptsOf,
  awaitDeliveries,
  bothPulling,
  endpoint,
  enginePlatform,
  examplePayload,
  owner,
  publishEvent,
  subscriber,
  workerProcess,
} from "../support/WebhookEngine.ts"

const limited = enginePlatform({ WEBHOOK_RATE_LIMIT_PER_MINUTE: "5", WEBHOOK_BACKOFF_UNIT_MS: "5" })

/** Milliseconds until the next clock minute. */
const untilNextMinute = () => 60_000 - (Date.now() % 60_000)

describe("rate limit across worker processes", () => {
  layer(limited.layer, { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect(
      "marks attempts beyond the per-minute limit rate_limited, without using up attempts, across two processes",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          yield* Effect.all([workerProcess(limited.env), workerProcess(limited.env)], {
            concurrency: "unbounded",
          })
          yield* bothPulling
          const acme = yield* owner("acme-limited")
          const sub = yield* subscriber({ ownerId: acme.id })
          const id = yield* endpoint(sub.id, receiver.url("/limited"), ["delinquency.created"])
          // The burst must fall inside one clock minute (the limit's window).
          if (untilNextMinute() < 15_000) yield* Effect.sleep(untilNextMinute() + 200)
          const EVENTS = 9
          yield* Effect.forEach(
            Array.from({ length: EVENTS }, (_, i) => i),
            () => publishEvent("delinquency.created", acme.slug, examplePayload("delinquency.created")),
            { concurrency: "unbounded" },
          )
          const limitedRows = yield* awaitDeliveries(
            id,
            (rows) =>
              rows.length === EVENTS &&
              rows.filter((r) => r.status === "delivered").length === 5 &&
              rows.filter((r) => r.status === "rate_limited").length === EVENTS - 5,
          )
          assert.strictEqual(receiver.received("/limited").length, 5)
          for (const row of limitedRows.filter((r) => r.status === "rate_limited")) {
            assert.strictEqual(row.attempt_number, 1, "a rate-limited attempt was used up")
            assert.deepStrictEqual(yield* attemptsOf(row.id), [])
          }

          // The next minute lets the rest through, each on its first attempt.
          const rows = yield* awaitDeliveries(id, (rows) => rows.every((r) => r.status === "delivered"))
          for (const row of rows) {
            assert.strictEqual(row.attempt_number, 1)
            assert.deepStrictEqual(
              (yield* attemptsOf(row.id)).map((a) => [a.series, a.attempt_number, a.status_code]),
              [[1, 1, 200]],
            )
          }
          const perMinute = new Map<number, number>()
          for (const request of receiver.received("/limited")) {
            const minute = Math.floor(request.at / 60_000)
            perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1)
          }
          assert.isAtMost(Math.max(...perMinute.values()), 5)
          assert.strictEqual(receiver.received("/limited").length, EVENTS)
        }).pipe(Effect.scoped),
      180_000,
    )
  })
})

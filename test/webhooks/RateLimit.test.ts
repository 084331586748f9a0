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

/** The engine's time unit: the limit counts over any 60 units (a minute in production). */
const UNIT_MS = 200
const WINDOW_MS = 60 * UNIT_MS
const limited = enginePlatform({
  WEBHOOK_RATE_LIMIT_PER_MINUTE: "5",
  WEBHOOK_BACKOFF_UNIT_MS: String(UNIT_MS),
})

/** Milliseconds until the next whole window of the clock (a clock minute in production). */
const untilNextWindow = () => WINDOW_MS - (Date.now() % WINDOW_MS)

describe("rate limit across worker processes", () => {
  layer(limited.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "marks attempts beyond the limit per 60 units rate_limited, without using up attempts, across two processes",
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
          // The burst must fall inside one clock window (the limit's window).
          if (untilNextWindow() < 15 * UNIT_MS) yield* Effect.sleep(untilNextWindow() + UNIT_MS)
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

          // The next window lets the rest through, each on its first attempt.
          const rows = yield* awaitDeliveries(id, (rows) => rows.every((r) => r.status === "delivered"))
          for (const row of rows) {
            assert.strictEqual(row.attempt_number, 1)
            assert.deepStrictEqual(
              (yield* attemptsOf(row.id)).map((a) => [a.series, a.attempt_number, a.status_code]),
              [[1, 1, 200]],
            )
          }
          const perWindow = new Map<number, number>()
          for (const request of receiver.received("/limited")) {
            const window = Math.floor(request.at / WINDOW_MS)
            perWindow.set(window, (perWindow.get(window) ?? 0) + 1)
          }
          assert.isAtMost(Math.max(...perWindow.values()), 5)
          assert.strictEqual(receiver.received("/limited").length, EVENTS)
        }).pipe(Effect.scoped),
      120_000,
    )
  })
})

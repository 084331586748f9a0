import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SLOW_AFTER_TIMEOUTS, SLOWED_CAP } from "../../backend/webhooks/delivery/EndpointPlaces.ts"
import { NEVER } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import {
  awaitDeliveries,
  engineService,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

const CAP = 4
const service = engineService({
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(CAP),
  WEBHOOK_TIMEOUT_MS: "3000",
  WEBHOOK_BACKOFF_UNIT_MS: "50",
})

describe("fairness across partners", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "keeps an endpoint whose receiver never answers to its cap of open requests, while another owner's deliveries all arrive",
      () =>
        Effect.gen(function* () {
          const hanging = yield* receiverEndpoint("owner-a", "/hangs", ["delinquency.created"])
          hanging.receiver.respond("/hangs", () => ({ status: 200, delayMs: 600_000 }))
          const healthy = yield* receiverEndpoint("owner-b", "/answers", ["delinquency.created"])
          const A = 40
          const B = 20
          yield* Effect.forEach(
            Array.from({ length: A }),
            () => publishEvent("delinquency.created", "owner-a", examplePayload("delinquency.created")),
            { concurrency: 8 },
          )
          yield* awaitDeliveries(hanging.endpointId, (rows) => rows.length === A)
          yield* Effect.forEach(
            Array.from({ length: B }),
            () => publishEvent("delinquency.created", "owner-b", examplePayload("delinquency.created")),
            { concurrency: 8 },
          )
          yield* awaitDeliveries(
            healthy.endpointId,
            (rows) => rows.length === B && rows.every((r) => r.status === "delivered"),
          )
          assert.strictEqual(healthy.receiver.received("/answers").length, B)

          // Owner A's deliveries are all still waiting on their receiver or their turn: none lost, none failed.
          const aRows = yield* query(
            (sql) => sql`
              select d.status, d.attempt_number, count(a.*)::int as attempts
              from webhook_deliveries d left join webhook_attempts a on a.delivery_id = d.id
              where d.endpoint_id = ${hanging.endpointId} group by d.id`,
          )
          assert.strictEqual(aRows.length, A)
          assert.isTrue(aRows.every((r) => r.status === "pending" || r.status === "retrying"))
          // An attempt put off for the cap is not an attempt: a delivery never tried is still on its first.
          for (const row of aRows.filter((r) => r.attempts === 0)) assert.strictEqual(row.attempt_number, 1)
          assert.isAtMost(hanging.receiver.open("/hangs").most, CAP)
          assert.isAtLeast(hanging.receiver.received("/hangs").length, 1)
        }).pipe(Effect.scoped),
      120_000,
    )
  })
})

const SLOWING_CAP = 6
const slowing = engineService({
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(SLOWING_CAP),
  WEBHOOK_TIMEOUT_MS: "500",
  WEBHOOK_BACKOFF_UNIT_MS: "50",
})

/** The endpoint's attempts that timed out, as recorded. */
const timeoutsOf = (endpointId: number) =>
  query(
    (sql) => sql`
      select count(*)::int as n from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id
      where d.endpoint_id = ${endpointId} and a.failure_reason like 'No response within%'`,
  ).pipe(Effect.map(([row]) => Number(row!.n)))

describe("an endpoint whose attempts keep timing out", () => {
  layer(slowing.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "is slowed after 3 timeouts in a row to at most 2 attempts at once, and gets its full cap back when it answers",
      () =>
        Effect.gen(function* () {
          const hanging = yield* receiverEndpoint("owner-slow", "/hangs", ["delinquency.created"])
          const path = "/hangs"
          hanging.receiver.respond(path, () => ({ status: 200, delayMs: 600_000 }))
          yield* Effect.forEach(
            Array.from({ length: 40 }),
            () => publishEvent("delinquency.created", "owner-slow", examplePayload("delinquency.created")),
            { concurrency: 8 },
          )
          // Before the streak, the endpoint has its full cap.
          yield* eventually(
            Effect.sync(() => hanging.receiver.open(path).most),
            (most) => most === SLOWING_CAP,
          )
          yield* eventually(timeoutsOf(hanging.endpointId), (n) => n >= SLOW_AFTER_TIMEOUTS)
          // Attempts made before the streak ended may still be open: count from when they are gone.
          yield* eventually(
            Effect.sync(() => hanging.receiver.open(path).now),
            (open) => open <= SLOWED_CAP,
          )
          hanging.receiver.resetMost(path)
          const before = hanging.receiver.received(path).length
          yield* eventually(
            Effect.sync(() => hanging.receiver.received(path).length),
            (n) => n >= before + 4 * SLOWING_CAP,
          )
          assert.isAtMost(hanging.receiver.open(path).most, SLOWED_CAP)

          // One answer ends the streak: the endpoint may again have its full cap open at once. Its queue was
          // booked at the slowed pace and comes back at it; new deliveries are attempted at once, up to the cap.
          let answered = false
          hanging.receiver.respond(path, () => {
            if (answered) return { status: 200, delayMs: 600_000 }
            answered = true
            return { status: 200 }
          })
          yield* awaitDeliveries(hanging.endpointId, (rows) => rows.some((r) => r.status === "delivered"))
          hanging.receiver.resetMost(path)
          yield* Effect.forEach(
            Array.from({ length: 2 * SLOWING_CAP }),
            () => publishEvent("delinquency.created", "owner-slow", examplePayload("delinquency.created")),
            { concurrency: 8 },
          )
          yield* eventually(
            Effect.sync(() => hanging.receiver.open(path).most),
            (most) => most === SLOWING_CAP,
          )
        }).pipe(Effect.scoped),
      120_000,
    )
  })
})

const DEFER_TIMEOUT_MS = 1000
const deferring = engineService({
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: "4",
  WEBHOOK_TIMEOUT_MS: String(DEFER_TIMEOUT_MS),
  // A unit far shorter than the deadline: waves a unit apart would come back long before a place frees.
  WEBHOOK_BACKOFF_UNIT_MS: "5",
})

describe("the attempts of a slowed endpoint over its cap", () => {
  layer(deferring.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "are booked in waves of its slowed cap its deadline apart, so they do not come round again before a place frees",
      () =>
        Effect.gen(function* () {
          const hanging = yield* receiverEndpoint("owner-deferred", "/hangs", ["delinquency.created"])
          hanging.receiver.respond("/hangs", () => NEVER)
          const A = 40
          yield* Effect.forEach(
            Array.from({ length: A }),
            () =>
              publishEvent("delinquency.created", "owner-deferred", examplePayload("delinquency.created")),
            { concurrency: 8 },
          )
          yield* eventually(timeoutsOf(hanging.endpointId), (n) => n >= SLOW_AFTER_TIMEOUTS)
          // More deliveries once it is slowed, one at a time: each put off by a claim of its own.
          const LATER = 20
          yield* Effect.forEach(
            Array.from({ length: LATER }),
            () =>
              publishEvent(
                "delinquency.created",
                "owner-deferred",
                examplePayload("delinquency.created"),
              ).pipe(Effect.andThen(Effect.sleep("20 millis"))),
            { concurrency: 1 },
          )
          // Deliveries never attempted, put off for the cap: each is due again at least half a deadline after the
          // claim that put it off (a unit apart, 60 waves would be 300 ms at most), and no deadline holds more of
          // them than the slowed cap, whichever claim put them off. Those put off before the endpoint slowed come
          // round once more first.
          const deferred = query(
            (sql) => sql<Array<{ due_ms: number; ahead_ms: number }>>`
              select extract(epoch from next_retry_at) * 1000 as due_ms,
                     extract(epoch from (next_retry_at - updated_at)) * 1000 as ahead_ms
              from webhook_deliveries
              where endpoint_id = ${hanging.endpointId} and status = 'pending' and lease_until is null
                and next_retry_at is not null
              order by next_retry_at`,
          )
          const booked = (rows: ReadonlyArray<{ due_ms: number; ahead_ms: number }>) =>
            rows.every(
              (r, i) =>
                Number(r.ahead_ms) >= DEFER_TIMEOUT_MS / 2 &&
                (i < SLOWED_CAP ||
                  Number(r.due_ms) - Number(rows[i - SLOWED_CAP]!.due_ms) >= DEFER_TIMEOUT_MS - 1),
            )
          yield* eventually(deferred, (rows) => rows.length >= (A + LATER) / 2 && booked(rows))
        }).pipe(Effect.scoped),
      60_000,
    )
  })
})

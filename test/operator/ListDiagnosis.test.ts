import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  LATENCY_SLOTS,
  latencyQuantile,
  latencyQuantileBounds,
  latencySlot,
} from "../../backend/webhooks/delivery/HealthBuckets.ts"
import { consoleService } from "../support/Console.ts"
import { call, operatorSession } from "../support/Operator.ts"
import {
  attemptsOf,
  awaitDeliveries,
  examplePayload,
  publishEvent,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

// The console and the workers: real attempts against a real receiver, two attempts at most.
const service = consoleService()
const EVENT = "policy.created"
const TIMEOUT = 120_000

const p95Of = (durations: ReadonlyArray<number>) => {
  const latency = new Array<number>(LATENCY_SLOTS).fill(0)
  for (const d of durations) latency[latencySlot(d)]!++
  return latencyQuantile(latency, 0.95)
}

const p95BoundsOf = (durations: ReadonlyArray<number>) => {
  const latency = new Array<number>(LATENCY_SLOTS).fill(0)
  for (const d of durations) latency[latencySlot(d)]!++
  return latencyQuantileBounds(latency, 0.95)
}

describe("the operator lists diagnose", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "a delivery row carries its last status code, failure reason, attempts made and next retry",
      () =>
        Effect.gen(function* () {
          const viewer = yield* operatorSession("viewer@list-diagnosis.test", "viewer")
          const down = yield* receiverEndpoint("diag-down", "/down", [EVENT])
          down.receiver.respond("/down", () => ({ status: 500, body: "receiver is down" }))
          const busy = yield* receiverEndpoint("diag-busy", "/busy", [EVENT])
          busy.receiver.respond("/busy", () => ({ status: 503, headers: { "retry-after": "3600" } }))

          yield* publishEvent(EVENT, "diag-down", examplePayload(EVENT))
          yield* publishEvent(EVENT, "diag-busy", examplePayload(EVENT))
          const [failed] = yield* awaitDeliveries(down.endpointId, (rows) => rows[0]?.status === "failed")
          const [waiting] = yield* awaitDeliveries(busy.endpointId, (rows) => rows[0]?.status === "retrying")

          const list = (owner: string) =>
            call("GET", `/api/deliveries?owner=${owner}`, { cookie: viewer.cookie }).pipe(
              Effect.map((answer) => answer.body.deliveries[0]),
            )
          const failedRow = yield* list("diag-down")
          assert.strictEqual(failedRow.id, Number(failed!.id))
          assert.strictEqual(failedRow.status, "failed")
          assert.strictEqual(failedRow.last_status_code, 500)
          assert.strictEqual(failedRow.last_failure_reason, "Destination answered 500")
          assert.strictEqual(failedRow.attempt_count, (yield* attemptsOf(failed!.id)).length)
          assert.strictEqual(failedRow.attempt_count, 2)
          assert.isNull(failedRow.next_retry_at)

          const waitingRow = yield* list("diag-busy")
          assert.strictEqual(waitingRow.status, "retrying")
          assert.strictEqual(waitingRow.last_status_code, 503)
          assert.strictEqual(waitingRow.last_failure_reason, "Destination answered 503")
          // One attempt made; the next (its attempt_number) waits for the hour the receiver asked for.
          assert.strictEqual(waitingRow.attempt_count, 1)
          assert.strictEqual(waitingRow.attempt_number, 2)
          assert.strictEqual(waitingRow.next_retry_at, waiting!.next_retry_at!.toISOString())
          const ahead =
            new Date(waitingRow.next_retry_at).getTime() - new Date(waiting!.last_attempted_at!).getTime()
          assert.isAtLeast(ahead, 3_600_000)
        }).pipe(Effect.scoped),
      TIMEOUT,
    )

    it.effect(
      "an endpoint row carries its last hour's success rate and p95 from the attempts made",
      () =>
        Effect.gen(function* () {
          const viewer = yield* operatorSession("viewer2@list-diagnosis.test", "viewer")
          const flaky = yield* receiverEndpoint("diag-flaky", "/flaky", [EVENT])
          // The first two requests fail, so two deliveries take their second (and last) attempt.
          flaky.receiver.respond("/flaky", (_, index) => (index < 2 ? { status: 500 } : { status: 200 }))
          const dead = yield* receiverEndpoint("diag-dead", "/dead", [EVENT])
          dead.receiver.respond("/dead", () => ({ status: 500 }))
          yield* receiverEndpoint("diag-quiet", "/quiet", [EVENT])
          for (let i = 0; i < 5; i++) {
            yield* publishEvent(EVENT, "diag-flaky", examplePayload(EVENT))
            yield* publishEvent(EVENT, "diag-dead", examplePayload(EVENT))
          }
          const flakyRows = yield* awaitDeliveries(
            flaky.endpointId,
            (rows) => rows.length === 5 && rows.every((row) => row.status === "delivered"),
          )
          const deadRows = yield* awaitDeliveries(
            dead.endpointId,
            (rows) => rows.length === 5 && rows.every((row) => row.status === "failed"),
          )
          const attempts = (rows: typeof flakyRows) =>
            Effect.map(
              Effect.forEach(rows, (row) => attemptsOf(row.id)),
              (all) => all.flat(),
            )
          const lastHour = (owner: string) =>
            call("GET", `/api/endpoints?owner=${owner}`, { cookie: viewer.cookie }).pipe(
              Effect.map((answer) => answer.body.endpoints[0].last_hour),
            )

          const flakyAttempts = yield* attempts(flakyRows)
          const flakyFailed = flakyAttempts.filter((a) => a.status_code !== 200).length
          assert.strictEqual(flakyFailed, 2)
          assert.deepStrictEqual(yield* lastHour("diag-flaky"), {
            attempts: flakyAttempts.length,
            succeeded: 5,
            failed: flakyFailed,
            success_rate: 5 / flakyAttempts.length,
            p95_ms: p95Of(flakyAttempts.map((a) => a.duration_ms!)),
            p95_bounds_ms: p95BoundsOf(flakyAttempts.map((a) => a.duration_ms!)),
          })

          const deadAttempts = yield* attempts(deadRows)
          assert.deepStrictEqual(yield* lastHour("diag-dead"), {
            attempts: 10,
            succeeded: 0,
            failed: 10,
            success_rate: 0,
            p95_ms: p95Of(deadAttempts.map((a) => a.duration_ms!)),
            p95_bounds_ms: p95BoundsOf(deadAttempts.map((a) => a.duration_ms!)),
          })
          assert.deepStrictEqual(yield* lastHour("diag-quiet"), {
            attempts: 0,
            succeeded: 0,
            failed: 0,
            success_rate: null,
            p95_ms: null,
            p95_bounds_ms: null,
          })
        }).pipe(Effect.scoped),
      TIMEOUT,
    )
  })
})

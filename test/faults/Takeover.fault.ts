import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import {
  assertDuplicatesRecorded,
  deadLetters,
  deliveryBurstUnderWay,
  deliveryTotals,
  requestsByDelivery,
} from "../support/FaultLoad.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import { eventually } from "../support/Streams.ts"
import { query } from "../support/WebhookEngine.ts"

/** How soon the issue asks deliveries to go on after a workers process dies, another one running. */
const RESUME_WITHIN_MS = 5000

/**
 * Two workers processes share a burst; one is killed (kill -9) a quarter into it. The other takes over what the
 * dead one held as soon as JetStream hands its messages on (their ack wait, kept short by in-progress marks while
 * a handler works) and its claims' process is seen gone: deliveries never stop for longer than that.
 */
describe("takeover after a workers process dies", () => {
  layer(faultStackLayer(), { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "kill -9 of one of two workers processes a quarter into a 2,000-delivery burst: deliveries resume within 5 s, " +
        "every delivery delivered, every request at the receiver recorded",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          yield* Effect.addFinalizer(() => stack.restore)
          const survivor = yield* stack.addWorkers
          const path = "/takeover"
          const DELIVERIES = 2000
          const { receiver, endpointId, context } = yield* deliveryBurstUnderWay(
            stack,
            "takeover-burst",
            path,
            DELIVERIES,
          )
          yield* stack.killWorkers
          const killedAt = yield* Clock.currentTimeMillis
          const atKill = receiver.received(path).length
          const totals = yield* stack.step(
            "every delivery delivered by the surviving process",
            eventually(
              deliveryTotals(endpointId),
              (t) => t.deliveries === DELIVERIES && t.byStatus.delivered === DELIVERIES,
            ),
            { context },
          )
          assert.isTrue(yield* survivor.process.groupRunning, "the surviving workers process runs")

          // The longest time without a request at the receiver, from the kill to the last request.
          const arrivals = receiver
            .received(path)
            .map((r) => r.at)
            .filter((at) => at >= killedAt)
            .sort((a, b) => a - b)
          let longestGap = 0
          let previous = killedAt
          for (const at of arrivals) {
            longestGap = Math.max(longestGap, at - previous)
            previous = at
          }
          // The deliveries the dead process had claimed and left without an outcome, made again by the survivor.
          const [{ abandoned }] = yield* query(
            (sql) => sql<[{ abandoned: number }]>`
              select count(distinct a.delivery_id)::int as abandoned
              from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id
              where d.endpoint_id = ${endpointId} and a.status_code is null`,
          )
          // Requests at the receiver per 5 s from the kill on, as the on-call engineer's graph would show them.
          const perFiveSeconds: Array<number> = []
          for (const at of arrivals) {
            const bucket = Math.floor((at - killedAt) / 5000)
            while (perFiveSeconds.length <= bucket) perFiveSeconds.push(0)
            perFiveSeconds[bucket]! += 1
          }
          const requests = requestsByDelivery(receiver, path)
          assert.strictEqual(requests.size, DELIVERIES, "every delivery reached the receiver")
          const duplicates = assertDuplicatesRecorded(receiver, path, totals)
          assert.strictEqual(yield* deadLetters, 0)
          yield* recordFigure("takeover: kill -9 of one of two workers processes, 2,000-delivery burst", {
            deliveries: totals.deliveries,
            delivered: totals.byStatus.delivered,
            received_before_kill: atKill,
            received_after_kill: arrivals.length,
            longest_gap_after_kill_ms: Math.round(longestGap),
            requests_per_5s_after_kill: perFiveSeconds,
            claims_taken_over: abandoned,
            requests_at_receiver: receiver.received(path).length,
            duplicates_at_receiver: duplicates,
          })
          assert.isAtMost(
            longestGap,
            RESUME_WITHIN_MS,
            "deliveries stopped for longer than a takeover may take",
          )
        }).pipe(Effect.scoped),
      300_000,
    )
  })
})

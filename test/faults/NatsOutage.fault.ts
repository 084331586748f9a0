import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import {
  assertAcceptedDelivered,
  deadLetters,
  errorLines,
  failedAsDefects,
  prospectLoad,
  prospectOf,
} from "../support/FaultLoad.ts"
import { prospectSetUp } from "../support/Prospects.ts"
import { startReceiver } from "../support/Receiver.ts"
import { postJson } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

const OUTAGE_MS = 15_000

describe("NATS stopped for 15 s under load", () => {
  layer(faultStackLayer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect(
      "both processes keep running, no 500 is answered, nothing accepted is lost, and no failed publish counts as a defect",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          yield* Effect.addFinalizer(() => stack.restore)
          const receiver = yield* startReceiver
          const source = "nats-outage"
          const { partner, slug } = yield* prospectSetUp("org-nats-outage", source)
          const path = `/${source}`
          const created = yield* postJson<{ endpoint: { id: number } }>(
            partner,
            `/partners/${slug}/webhooks/endpoints`,
            {
              endpoint: {
                name: "fault receiver",
                destination_url: receiver.url(path),
                events: ["prospect.ready"],
              },
            },
          )
          assert.strictEqual(created.status, 200, created.text)
          const endpointId = created.body.endpoint.id
          const defectsBefore = yield* failedAsDefects(stack.workers())
          const errorsBefore = errorLines(stack.workers())

          const load = yield* prospectLoad(partner, slug, source)
          const context = () => ({ load: load.statuses(), received: receiver.received(path).length })
          yield* stack.step(
            "load delivered before the fault",
            eventually(
              Effect.sync(() => receiver.received(path).length),
              (n) => n >= 5,
            ),
            { context },
          )
          yield* stack.step("nats-server stopped", stack.nats.stop(0))
          yield* stack.step("outage", Effect.sleep(`${OUTAGE_MS} millis`))
          yield* stack.step("nats-server started", stack.nats.start(0))
          const back = yield* Clock.currentTimeMillis
          const deliveredAfter = yield* stack.step(
            "a prospect posted after the return delivered",
            Effect.gen(function* () {
              yield* eventually(
                Effect.sync(() => {
                  const id = load.acceptedSince(back)
                  return id !== undefined && receiver.received(path).some((r) => prospectOf(r.body) === id)
                }),
                (ok) => ok,
              )
              return (yield* Clock.currentTimeMillis) - back
            }),
            { seconds: 60, context },
          )
          yield* Effect.sleep("3 seconds")
          const report = yield* stack.step("load stops", load.stop, { context })
          yield* stack.assertAlive
          assert.deepStrictEqual(report.serverErrors, [], JSON.stringify(report.statuses))
          assert.strictEqual(report.statuses["POST error"] ?? 0, 0, "a POST got no answer")

          const accepted = new Set(report.accepted)
          const { totals, duplicates } = yield* assertAcceptedDelivered(stack, {
            source,
            accepted,
            endpointId,
            receiver,
            path,
          })
          assert.strictEqual(yield* deadLetters, 0)
          // A publish that failed while the broker was away is retried, not a defect.
          const defects = (yield* failedAsDefects(stack.workers())) - defectsBefore
          const errors = errorLines(stack.workers()).slice(errorsBefore.length)
          assert.strictEqual(defects, 0, `actor_failed_total{reason="defect"} grew:\n${errors.join("\n")}`)
          yield* stack.assertAlive
          yield* recordFigure(`nats-server stopped ${OUTAGE_MS / 1000} s`, {
            statuses: report.statuses,
            prospects_accepted: accepted.size,
            deliveries: totals.deliveries,
            duplicates_at_receiver: duplicates,
            error_log_lines: errors.length,
            recovered_ms: { webhook_delivered: deliveredAfter },
          })
        }).pipe(Effect.scoped),
      180_000,
    )
  })
})

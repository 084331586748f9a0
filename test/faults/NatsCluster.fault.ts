import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import {
  assertDuplicatesRecorded,
  deadLetters,
  deliveryTotals,
  prospectLoad,
  prospectOf,
  requestsByDelivery,
} from "../support/FaultLoad.ts"
import { prospectSetUp } from "../support/Prospects.ts"
import { startReceiver } from "../support/Receiver.ts"
import { postJson, query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"
import { examplePayload, publishEvent } from "../support/WebhookEngine.ts"

describe("a three-node NATS cluster with R3 streams", () => {
  layer(faultStackLayer({ cluster: true }), { excludeTestServices: true, timeout: 240_000 })((it) => {
    it.effect(
      "kill -9 of the WEBHOOKS stream's leader in the middle of a 2,000-delivery burst, then its return: nothing lost",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          yield* Effect.addFinalizer(() => stack.restore)
          const receiver = yield* startReceiver
          const source = "cluster"
          const { partner, slug } = yield* prospectSetUp("org-cluster", source)
          const path = "/cluster"
          receiver.respond(path, (_, i) => ({ status: 200, delayMs: 5 + (i % 5) * 10 }))
          const created = yield* postJson<{ endpoint: { id: number } }>(
            partner,
            `/partners/${slug}/webhooks/endpoints`,
            {
              endpoint: {
                name: "fault receiver",
                destination_url: receiver.url(path),
                events: ["prospect.ready", "policy_application.quoted"],
              },
            },
          )
          assert.strictEqual(created.status, 200, created.text)
          const endpointId = created.body.endpoint.id

          // A burst of events straight into EVENTS, and prospects through the API (outbox, actors) beside it.
          const BURST = 2000
          const payload = examplePayload("policy_application.quoted")
          yield* stack.step(
            `publish ${BURST} events`,
            Effect.forEach(
              Array.from({ length: BURST }, (_, i) => i),
              () => publishEvent("policy_application.quoted", slug, payload),
              { concurrency: 50, discard: true },
            ),
          )
          const load = yield* prospectLoad(partner, slug, source, { loops: 1 })
          const context = () => ({ load: load.statuses(), received: receiver.received(path).length })
          yield* stack.step(
            "a quarter delivered",
            eventually(
              Effect.sync(() => receiver.received(path).length),
              (n) => n >= BURST / 4,
            ),
            { context },
          )
          const nats = yield* Nats
          const client = yield* NatsClient
          const info = yield* Effect.promise(() => client.jsm.streams.info(nats.streamName("WEBHOOKS")))
          const leader = info.cluster?.leader ?? "partner-nats-a"
          const node = ["a", "b", "c"].indexOf(leader.slice(-1))
          yield* stack.step(`kill -9 of ${leader}`, stack.nats.stop(node, "SIGKILL"))
          yield* Effect.sleep("5 seconds")
          yield* stack.step(`${leader} started again`, stack.nats.start(node))
          yield* Effect.sleep("3 seconds")
          const report = yield* stack.step("load stops", load.stop, { context })
          assert.deepStrictEqual(report.serverErrors, [], JSON.stringify(report.statuses))
          assert.strictEqual(report.statuses["POST error"] ?? 0, 0, "a POST got no answer")

          const accepted = new Set(report.accepted)
          const expected = BURST + accepted.size
          const totals = yield* stack.step(
            "every delivery delivered",
            eventually(
              deliveryTotals(endpointId),
              (t) => t.deliveries >= expected && t.byStatus.delivered === t.deliveries,
            ),
            { context: () => ({ expected, received: receiver.received(path).length }) },
          )
          assert.strictEqual(totals.deliveries, expected, "one delivery per event")
          const ready = yield* query(
            (sql) => sql<Array<{ source_prospect_id: string; status: string }>>`
              select source_prospect_id, status from prospects where source = ${source}`,
          )
          assert.sameMembers(
            ready.map((r) => r.source_prospect_id),
            [...accepted],
          )
          assert.sameMembers(
            [
              ...new Set(
                receiver
                  .received(path)
                  .filter((r) => r.body.includes('"prospect.ready"'))
                  .flatMap((r) => prospectOf(r.body) ?? []),
              ),
            ],
            [...accepted],
          )
          assert.strictEqual(requestsByDelivery(receiver, path).size, expected)
          const duplicates = assertDuplicatesRecorded(receiver, path, totals)
          assert.strictEqual(yield* deadLetters, 0)
          yield* stack.assertAlive
          yield* recordFigure("3-node NATS cluster, stream leader killed mid-burst", {
            killed: leader,
            deliveries: totals.deliveries,
            delivered: totals.byStatus.delivered,
            prospects_accepted: accepted.size,
            statuses: report.statuses,
            duplicates_at_receiver: duplicates,
          })
        }).pipe(Effect.scoped),
      240_000,
    )
  })
})

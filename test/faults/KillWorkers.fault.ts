import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { BulkRetries } from "../../backend/webhooks/bulk/BulkRetries.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import {
  assertDuplicatesRecorded,
  deadLetters,
  deliveryBurstUnderWay,
  deliveryTotals,
  requestsByDelivery,
} from "../support/FaultLoad.ts"
import { envelope, ingestSetUp, postEvent, prospectUpdate } from "../support/Ingest.ts"
import { startReceiver } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import { endpoint, owner, query, subscriber } from "../support/WebhookEngine.ts"

/**
 * `kill -9` of the workers process in the middle of each kind of work it does, then a new workers process: nothing
 * accepted is lost, everything reaches its final state once, and every request a receiver got is recorded.
 */

const count = (run: Parameters<typeof query<Array<{ n: number }>>>[0]) =>
  Effect.map(query(run), ([row]) => row!.n)

describe("kill -9 of the workers", () => {
  layer(faultStackLayer(), { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "in the middle of a 2,000-delivery burst: every delivery delivered, every request at the receiver recorded",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          yield* Effect.addFinalizer(() => stack.restore)
          const path = "/burst"
          const DELIVERIES = 2000
          const { receiver, endpointId, events, context } = yield* deliveryBurstUnderWay(
            stack,
            "kill-burst",
            path,
            DELIVERIES,
          )
          yield* stack.killWorkers
          const atKill = receiver.received(path).length
          yield* stack.startWorkers
          const totals = yield* stack.step(
            "every delivery delivered",
            eventually(
              deliveryTotals(endpointId),
              (t) => t.deliveries === DELIVERIES && t.byStatus.delivered === DELIVERIES,
            ),
            { context },
          )
          const routed = yield* query(
            (sql) => sql<Array<{ event_id: string }>>`
              select event_id from webhook_deliveries where endpoint_id = ${endpointId}`,
          )
          assert.sameMembers(
            routed.map((r) => r.event_id),
            events.map((e) => e.eventId),
          )
          const requests = requestsByDelivery(receiver, path)
          assert.sameMembers(
            [...requests.keys()],
            [...totals.attempts.keys()],
            "a delivery never reached the receiver",
          )
          const duplicates = assertDuplicatesRecorded(receiver, path, totals)
          assert.strictEqual(yield* deadLetters, 0)
          yield* stack.assertAlive
          yield* recordFigure("kill -9 of the workers, 2,000-delivery burst", {
            deliveries: totals.deliveries,
            delivered: totals.byStatus.delivered,
            received_before_kill: atKill,
            requests_at_receiver: receiver.received(path).length,
            duplicates_at_receiver: duplicates,
          })
        }).pipe(Effect.scoped),
      300_000,
    )

    it.effect(
      "in the middle of a 5,000-event ingest burst: every accepted event applied once, every prospect at its newest state",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          yield* Effect.addFinalizer(() => stack.restore)
          const source = "kill-ingest"
          const setUp = yield* ingestSetUp("org-kill-ingest", source)
          const PROSPECTS = 1000
          const UPDATES = 5
          // Round k holds update k of every prospect, so the burst interleaves prospects.
          const bodies = Array.from({ length: UPDATES }, (_, k) =>
            Array.from({ length: PROSPECTS }, (_, p) =>
              envelope(source, prospectUpdate(`p-${p}`, `2026-01-10T10:0${k}:00Z`)),
            ),
          ).flat()
          const answers: Record<number, number> = {}
          const accepted: Array<string> = []
          const posting = yield* Effect.forkChild(
            Effect.forEach(
              bodies,
              (body) =>
                Effect.map(postEvent(setUp.client, body), (answer) => {
                  answers[answer.status] = (answers[answer.status] ?? 0) + 1
                  if (answer.status === 202)
                    accepted.push((JSON.parse(answer.text) as { event_id: string }).event_id)
                }),
              { concurrency: 16, discard: true },
            ),
          )
          const logged = count(
            (sql) => sql`select count(*)::int as n from ingest_log where source = ${source}`,
          )
          yield* stack.step(
            "a quarter applied",
            eventually(logged, (n) => n >= bodies.length / 4),
            { context: () => ({ answers }) },
          )
          yield* stack.killWorkers
          const atKill = yield* logged
          yield* stack.startWorkers
          yield* stack.step("every event posted", Fiber.join(posting), { context: () => ({ answers }) })
          assert.deepStrictEqual(answers, { 202: bodies.length })
          // Counted by event, not by row: a copy redelivered after the kill is logged `duplicate` and would
          // make up the count while an event the killed process held waits out its ack wait.
          const decidedEvents = count(
            (sql) => sql`
              select count(distinct event_id)::int as n from ingest_log
              where source = ${source} and outcome in ('applied', 'stale')`,
          )
          yield* stack.step(
            "every accepted event logged",
            eventually(decidedEvents, (n) => n >= accepted.length),
            { context: () => ({ accepted: accepted.length }) },
          )
          // Applied (or found stale) once each; a copy redelivered after the kill is logged `duplicate`.
          yield* Effect.sleep("2 seconds")
          const log = yield* query(
            (sql) => sql<Array<{ event_id: string; outcome: string }>>`
              select event_id, outcome from ingest_log where source = ${source}`,
          )
          const decided = log.filter((r) => r.outcome === "applied" || r.outcome === "stale")
          assert.strictEqual(
            decided.length,
            bodies.length,
            "an event was applied more than once, or not at all",
          )
          assert.sameMembers(
            decided.map((r) => r.event_id),
            accepted,
          )
          const outcomes: Record<string, number> = {}
          for (const row of log) outcomes[row.outcome] = (outcomes[row.outcome] ?? 0) + 1
          assert.deepStrictEqual(
            log.filter((r) => r.outcome !== "applied" && r.outcome !== "stale" && r.outcome !== "duplicate"),
            [],
          )
          const prospects = yield* query(
            (sql) => sql<Array<{ last_event_at: string }>>`
              select to_char(last_event_at at time zone 'UTC', 'HH24:MI') as last_event_at
              from prospects where source = ${source}`,
          )
          assert.strictEqual(prospects.length, PROSPECTS)
          assert.deepStrictEqual(
            prospects.filter((p) => p.last_event_at !== `10:0${UPDATES - 1}`),
            [],
            "a prospect is not at its newest update",
          )
          assert.strictEqual(yield* deadLetters, 0)
          yield* stack.assertAlive
          yield* recordFigure("kill -9 of the workers, 5,000-event ingest burst", {
            accepted: accepted.length,
            logged: log.length,
            logged_before_kill: atKill,
            outcomes,
            prospects: prospects.length,
          })
        }).pipe(Effect.scoped),
      300_000,
    )

    it.effect(
      "in the middle of a bulk retry: it resumes and retries each delivery once",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          yield* Effect.addFinalizer(() => stack.restore)
          const receiver = yield* startReceiver
          const path = "/bulk"
          const acme = yield* owner("kill-bulk")
          const sub = yield* subscriber({ ownerId: acme.id })
          const endpointId = yield* endpoint(sub.id, receiver.url(path), ["policy.created"])
          const FAILED = 300
          yield* query(
            (sql) => sql`
              insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status,
                                              last_attempt_failure_reason)
              select ${endpointId}, 'kill-bulk-' || i, 'policy.created', ${acme.slug},
                     convert_to('{"n":' || i || '}', 'UTF8'), 'failed', 'Destination answered 500'
              from generate_series(1, ${FAILED}) i`,
          )
          const bulk = yield* BulkRetries
          const job = yield* bulk.create({ endpoint: endpointId, status: "failed" }, 50, "faults@example.com")
          assert.strictEqual(job.total, FAILED)
          const progress = bulk.get(job.id)
          yield* stack.step(
            "a third retried",
            eventually(progress, (j) => j.done >= FAILED / 3),
          )
          yield* stack.killWorkers
          const atKill = (yield* progress).done
          yield* stack.startWorkers
          const finished = yield* stack.step(
            "the bulk retry completed",
            eventually(progress, (j) => j.status !== "running"),
          )
          assert.deepStrictEqual(
            [finished.status, finished.done, finished.total],
            ["completed", FAILED, FAILED],
          )
          const series = yield* stack.step(
            "every retried delivery delivered",
            eventually(
              query(
                (sql) => sql<Array<{ series: number; status: string; n: number }>>`
                  select series, status, count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId}
                  group by series, status order by series, status`,
              ),
              (rows) => rows.length === 1 && rows[0]!.status === "delivered",
            ),
            { context: () => ({ received: receiver.received(path).length }) },
          )
          // Retried once each: the second series of every delivery, none a third.
          assert.deepStrictEqual(
            series.map((r) => [r.series, r.status, r.n]),
            [[2, "delivered", FAILED]],
          )
          const totals = yield* deliveryTotals(endpointId)
          assert.strictEqual(requestsByDelivery(receiver, path).size, FAILED)
          const duplicates = assertDuplicatesRecorded(receiver, path, totals)
          yield* stack.assertAlive
          yield* recordFigure("kill -9 of the workers during a bulk retry", {
            total: finished.total,
            done: finished.done,
            done_before_kill: atKill,
            requests_at_receiver: receiver.received(path).length,
            duplicates_at_receiver: duplicates,
          })
        }).pipe(Effect.scoped),
      300_000,
    )
  })
})

import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import {
  assertAcceptedDelivered,
  deadLetters,
  errorLines,
  prospectLoad,
  prospectOf,
} from "../support/FaultLoad.ts"
import { FaultStack, type FaultStackShape, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import { failoverPair, type FailoverPair } from "../support/PrivatePostgres.ts"
import { completeProspect, postProspect, prospectSetUp } from "../support/Prospects.ts"
import { type Receiver, startReceiver } from "../support/Receiver.ts"
import { postJson, query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

/** How long the standby waits before its promote, as a managed Postgres takes to decide the primary is gone. */
const PROMOTE_AFTER = "5 seconds"
/** Failovers in a row, each on the standby the one before left. */
const RUNS = 5
/** The issue's bound: a prospect created after the promote has its webhook delivered within this of it. */
const DELIVERED_WITHIN_MS = 10_000

/**
 * Where a run is stuck when it does not drain: what the relay left, which prospects wait and what their requests
 * became, what the sessions do, the consumers with messages in hand or waiting, and the workers' warnings. The
 * processes' whole output goes to `PARTNER_DATA_DIR/faults/` beside the figures.
 */
const diagnosis = (stack: FaultStackShape, source: string) =>
  Effect.gen(function* () {
    const database = yield* query((sql) =>
      Promise.all([
        sql`select count(*)::int as unsent, min(created_at)::text as oldest from outbox where sent_at is null`,
        sql`select p.id::text, p.source_prospect_id, p.status, p.version, p.updated_at::text,
                   (select json_agg(json_build_object('subject', o.subject, 'id', o.id, 'created', o.created_at::text,
                                                      'sent', o.sent_at::text) order by o.seq)
                    from outbox o where o.key = 'prospect:' || p.id) as outbox
            from prospects p where p.source = ${source} and p.status <> 'ready'`,
        sql`select application_name, state, wait_event_type, wait_event, left(query, 100) as query,
                   (now() - xact_start)::text as in_transaction_for
            from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`,
      ]),
    ).pipe(
      Effect.timeout("10 seconds"),
      Effect.catchCause(() => Effect.succeed("Postgres did not answer")),
    )
    const client = yield* NatsClient
    const consumers = yield* Effect.promise(async () => {
      const out: Array<unknown> = []
      for await (const stream of client.jsm.streams.list()) {
        for await (const c of client.jsm.consumers.list(stream.config.name)) {
          if (c.num_pending > 0 || c.num_ack_pending > 0 || c.num_redelivered > 0)
            out.push({
              consumer: `${stream.config.name}/${c.name}`,
              pending: c.num_pending,
              ackPending: c.num_ack_pending,
              redelivered: c.num_redelivered,
              delivered: c.delivered.stream_seq,
              ackFloor: c.ack_floor.stream_seq,
            })
        }
      }
      return out
    }).pipe(
      Effect.timeout("10 seconds"),
      Effect.orElseSucceed(() => "NATS did not answer"),
    )
    const dir = join(process.env.PARTNER_DATA_DIR ?? ".data", "faults")
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `${source}-workers.log`), stack.workers().process.stdout())
    writeFileSync(join(dir, `${source}-gateways.log`), stack.gateways().process.stdout())
    return {
      database,
      consumers,
      workers: stack
        .workers()
        .process.stdout()
        .split("\n")
        .filter((line) => /WARN|ERROR|relay|paused|resumed/.test(line))
        .slice(-30),
    }
  })

/** An endpoint of the owner `slug` for `prospect.ready`, at the receiver's `path`; its id. */
const readyEndpoint = (
  partner: Parameters<typeof postJson>[0],
  slug: string,
  receiver: Receiver,
  path: string,
) =>
  Effect.gen(function* () {
    const created = yield* postJson<{ endpoint: { id: number } }>(
      partner,
      `/partners/${slug}/webhooks/endpoints`,
      {
        endpoint: {
          name: "failover receiver",
          destination_url: receiver.url(path),
          events: ["prospect.ready"],
        },
      },
    )
    assert.strictEqual(created.status, 200, created.text)
    return created.body.endpoint.id
  })

/**
 * One failover under load: kill -9 of the primary's postmaster, the standby promoted 5 s later, a new prospect
 * POSTed once the promote is done; then every check of the issue. Its figures.
 */
const failoverRun = (stack: FaultStackShape, pair: FailoverPair, receiver: Receiver, run: number) =>
  Effect.gen(function* () {
    const source = `failover-sync-${run}`
    const path = `/${source}`
    const { partner, slug } = yield* prospectSetUp(`org-failover-sync-${run}`, source)
    const endpointId = yield* readyEndpoint(partner, slug, receiver, path)
    const load = yield* prospectLoad(partner, slug, source, { loops: 2, pauseMs: 100 })
    const context = () => ({ run, load: load.statuses(), received: receiver.received(path).length })
    // Traffic before the fault, so the pools hold connections and the relay, actors and deliveries all work.
    yield* stack.step(
      `run ${run}: prospects accepted and delivered before the fault`,
      eventually(
        Effect.sync(() => [load.statuses().accepted ?? 0, receiver.received(path).length] as const),
        ([accepted, received]) => accepted >= 20 && received >= 5,
      ),
      { context },
    )
    const acceptedBefore = load.statuses().accepted ?? 0
    yield* stack.step(
      `run ${run}: kill -9 of the primary's postmaster (port ${pair.primaryPort})`,
      pair.killPrimary,
    )
    yield* Effect.sleep(PROMOTE_AFTER)
    const promoting = yield* Clock.currentTimeMillis
    yield* stack.step(`run ${run}: promote the standby (port ${pair.standbyPort})`, pair.promoteStandby)
    const promoted = yield* Clock.currentTimeMillis

    // A prospect created after the promote: POSTed (again after a 503) until accepted, then its webhook awaited.
    const fresh = `${source}-after-promote`
    const freshAnswers: Record<number, number> = {}
    yield* stack.step(
      `run ${run}: a prospect POSTed after the promote accepted`,
      eventually(
        Effect.tap(postProspect(partner, slug, completeProspect(source, fresh)), (answer) =>
          Effect.sync(() => void (freshAnswers[answer.status] = (freshAnswers[answer.status] ?? 0) + 1)),
        ),
        (answer) => answer.status === 200,
      ),
      { context: () => ({ ...context(), freshAnswers }) },
    )
    const freshAccepted = yield* Clock.currentTimeMillis
    const freshDelivery = yield* stack.step(
      `run ${run}: its webhook delivered`,
      eventually(
        Effect.sync(() => receiver.received(path).find((r) => prospectOf(r.body) === fresh)),
        (request) => request !== undefined,
      ),
      { seconds: 60, context, diagnose: diagnosis(stack, source) },
    )
    const deliveredAfterPromoteMs = Math.round(freshDelivery!.at - promoting)

    // More load on the new primary, so the pools' new connections and the workers' leases serve a while.
    const acceptedThen = load.statuses().accepted ?? 0
    yield* stack.step(
      `run ${run}: more prospects accepted on the new primary`,
      eventually(
        Effect.sync(() => load.statuses().accepted ?? 0),
        (n) => n >= acceptedThen + 10,
      ),
      { context },
    )
    const report = yield* stack.step(`run ${run}: load stopped`, load.stop, { context })
    yield* stack.assertAlive
    assert.deepStrictEqual(
      report.serverErrors,
      [],
      `run ${run}: ${JSON.stringify({ statuses: report.statuses, errors: report.serverErrors })}`,
    )
    assert.deepStrictEqual(
      Object.keys(freshAnswers).filter((status) => Number(status) >= 500 && Number(status) !== 503),
      [],
      `run ${run}: the prospect POSTed after the promote was answered ${JSON.stringify(freshAnswers)}`,
    )

    // Nothing stuck: the outbox empties and no prospect stays `processing`; then each one is checked.
    const accepted = new Set([...report.accepted, fresh])
    yield* stack.step(
      `run ${run}: the outbox drained and every prospect decided`,
      eventually(
        query(
          (sql) => sql<Array<{ unsent: number; undecided: number }>>`
            select (select count(*)::int from outbox where sent_at is null) as unsent,
                   (select count(*)::int from prospects where source = ${source} and status <> 'ready') as undecided`,
        ),
        ([row]) => row!.unsent === 0 && row!.undecided === 0,
      ),
      {
        seconds: 90,
        context: () => ({ ...context(), accepted: accepted.size }),
        diagnose: diagnosis(stack, source),
      },
    )
    const { totals, duplicates } = yield* assertAcceptedDelivered(stack, {
      source,
      accepted,
      endpointId,
      receiver,
      path,
    })
    const [served] = yield* query(
      (sql) => sql<Array<{ port: number; standby: boolean }>>`
        select current_setting('port')::int as port, pg_is_in_recovery() as standby`,
    )
    assert.deepStrictEqual(
      served,
      { port: pair.primaryPort, standby: false },
      `run ${run}: the promoted standby serves`,
    )
    yield* stack.assertAlive
    const figures = {
      answers: report.statuses,
      acceptedBeforeKill: acceptedBefore,
      accepted: accepted.size,
      ready: accepted.size,
      deliveries: totals.deliveries,
      delivered: totals.byStatus.delivered ?? 0,
      requestsAtReceiver: receiver.received(path).length,
      duplicatesAtReceiver: duplicates,
      promoteMs: promoted - promoting,
      freshAcceptedAfterPromoteMs: freshAccepted - promoting,
      freshDeliveredAfterPromoteMs: deliveredAfterPromoteMs,
    }
    yield* recordFigure(`failover synchronous, run ${run} of ${RUNS}`, figures)
    // Past the bound, where the new prospect waited: each step's time after the promote (ms).
    const timeline =
      deliveredAfterPromoteMs <= DELIVERED_WITHIN_MS
        ? undefined
        : yield* query(
            (sql) => sql`
              select 'outbox ' || o.subject as step, extract(epoch from o.created_at) * 1000 - ${promoting} as written,
                     extract(epoch from o.sent_at) * 1000 - ${promoting} as sent
              from outbox o join prospects p on o.key = 'prospect:' || p.id
              where p.source = ${source} and p.source_prospect_id = ${fresh}
              union all
              select 'delivery', extract(epoch from d.created_at) * 1000 - ${promoting},
                     extract(epoch from d.delivered_at) * 1000 - ${promoting}
              from webhook_deliveries d
              where d.endpoint_id = ${endpointId} and convert_from(d.payload, 'UTF8') like ${`%"${fresh}"%`}`,
          )
    assert.isAtMost(
      deliveredAfterPromoteMs,
      DELIVERED_WITHIN_MS,
      `run ${run}: a prospect created after the promote had its webhook delivered ${deliveredAfterPromoteMs} ms after it: ${JSON.stringify(timeline)}`,
    )
    return figures
  })

describe("a Postgres failover to a synchronous standby under load", () => {
  layer(faultStackLayer({ postgres: failoverPair({ synchronous: true }) }), {
    excludeTestServices: true,
    timeout: 240_000,
  })((it) => {
    it.effect(
      `${RUNS} times in a row, kill -9 of the primary and promote 5 s later: no 500, both processes keep running, every prospect answered 200 stored, ready and delivered, a new one's webhook within 10 s of the promote`,
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          const pair = stack.postgres as FailoverPair
          const receiver = yield* startReceiver
          const figures: Array<Effect.Success<ReturnType<typeof failoverRun>>> = []
          for (let run = 1; run <= RUNS; run++) {
            if (run > 1) yield* stack.step(`run ${run}: a new synchronous standby`, pair.rebuildStandby)
            figures.push(
              yield* failoverRun(stack, pair, receiver, run).pipe(
                Effect.tapCause(() => Effect.ignore(diagnosis(stack, `failover-sync-${run}`))),
              ),
            )
          }
          assert.strictEqual(yield* deadLetters, 0)
          const errors = [...errorLines(stack.gateways()), ...errorLines(stack.workers())]
          if (errors.length > 0) process.stdout.write(`${errors.slice(0, 20).join("\n")}\n`)
          // A relay pass abandoned at its timeout is one that waited on a statement the driver never settled.
          assert.deepStrictEqual(
            errors.filter((line) => line.includes("PassTimedOut")),
            [],
            "a relay pass waited until its timeout",
          )
          const sum = (pick: (f: (typeof figures)[number]) => number) =>
            figures.reduce((total, f) => total + pick(f), 0)
          yield* recordFigure(`failover synchronous: ${figures.length} of ${RUNS} runs passed`, {
            accepted: sum((f) => f.accepted),
            readyAndDelivered: sum((f) => f.delivered),
            duplicatesAtReceiver: sum((f) => f.duplicatesAtReceiver),
            errorLogLines: errors.length,
            answers: figures.reduce<Record<string, number>>((all, f) => {
              for (const [k, v] of Object.entries(f.answers)) all[k] = (all[k] ?? 0) + v
              return all
            }, {}),
            freshDeliveredAfterPromoteMs: figures.map((f) => f.freshDeliveredAfterPromoteMs),
          })
        }).pipe(Effect.scoped),
      600_000,
    )
  })
})

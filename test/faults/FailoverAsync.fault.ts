import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import postgres from "postgres"
import { Nats } from "../../backend/platform/Nats.ts"
import { prospectLoad } from "../support/FaultLoad.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import { type ReplicatedPostgres, replicatedPostgres } from "../support/PrivatePostgres.ts"
import { prospectSetUp } from "../support/Prospects.ts"
import { startReceiver } from "../support/Receiver.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"
import { endpoint, subscriber } from "../support/WebhookEngine.ts"

/** How long the standby waits before its promote, as a managed Postgres takes to decide the primary is gone. */
const PROMOTE_AFTER = "5 seconds"
const EVENTS = ["prospect.created", "prospect.ready"]
/** How long before the kill the standby stops receiving WAL: the replication lag the failover meets. */
const LAG_MS = 2000

/** What the workers logged with `message`, each line's annotations. */
const logged = (stdout: string, message: string) =>
  stdout
    .split("\n")
    .filter((line) => line.includes(`"message":"${message}"`))
    .map((line) => (JSON.parse(line) as { annotations: Record<string, unknown> }).annotations)

describe("a Postgres failover to an asynchronous standby under load", () => {
  layer(faultStackLayer({ postgres: replicatedPostgres({ synchronous: false }) }), {
    excludeTestServices: true,
    timeout: 420_000,
  })((it) => {
    it.effect(
      "kill -9 of the primary, promote 5 s later: no 500, both processes keep running, nothing stuck, every event in EVENTS has its delivery",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          const pair = stack.postgres as ReplicatedPostgres
          const nats = yield* Nats
          const source = "failover-async"
          const { partner, slug } = yield* prospectSetUp("org-failover-async", source)
          const receiver = yield* startReceiver
          const path = "/prospects"
          const [owner] = yield* query(
            (sql) => sql<Array<{ id: string }>>`select id::text from owners where slug = ${slug}`,
          )
          const sub = yield* subscriber({ ownerId: owner!.id })
          const endpointId = yield* endpoint(sub.id, receiver.url(path), EVENTS)

          const load = yield* prospectLoad(partner, slug, source, { loops: 4, pauseMs: 20 })
          const context = () => ({ load: load.statuses(), received: receiver.received(path).length })
          yield* stack.step(
            "prospects accepted and delivered before the fault",
            eventually(
              Effect.sync(() => receiver.received(path).length),
              (n) => n >= 100,
            ),
            { context },
          )

          // The standby stops receiving WAL `LAG_MS` before the primary dies (its WAL receiver given no primary): the
          // commits of that window, answered by the primary, are the ones the failover loses.
          const server = (port: number) =>
            postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => undefined })
          yield* stack.step(
            "the standby stops receiving WAL",
            Effect.promise(async () => {
              const standby = server(pair.standbyPort)
              const primary = server(pair.primaryPort)
              try {
                await standby.unsafe("alter system set primary_conninfo = ''")
                await standby`select pg_reload_conf()`
                while ((await primary`select 1 from pg_stat_replication`).length > 0)
                  await new Promise((resolve) => setTimeout(resolve, 50))
              } finally {
                await Promise.all([standby.end(), primary.end()])
              }
            }),
          )
          yield* Effect.sleep(LAG_MS)
          const lag = yield* Effect.promise(async () => {
            const standby = server(pair.standbyPort)
            const primary = server(pair.primaryPort)
            try {
              const [received] = await standby<
                Array<{ lsn: string }>
              >`select pg_last_wal_receive_lsn()::text as lsn`
              const [behind] = await primary<Array<{ bytes: string }>>`
                select pg_wal_lsn_diff(pg_current_wal_lsn(), ${received!.lsn}::pg_lsn)::text as bytes`
              return { walBytesTheStandbyMissed: Number(behind!.bytes) }
            } finally {
              await Promise.all([standby.end(), primary.end()])
            }
          })
          const acceptedBefore = load.statuses().accepted ?? 0
          yield* stack.step("kill -9 of the primary's postmaster", pair.killPrimary)
          yield* Effect.sleep(PROMOTE_AFTER)
          yield* stack.step("promote the standby", pair.promoteStandby)
          const promoted = yield* Clock.currentTimeMillis
          yield* stack.step(
            "a prospect accepted after the promote",
            eventually(
              Effect.sync(() => load.acceptedSince(promoted)),
              (id) => id !== undefined,
            ),
            { context },
          )
          const firstAfterPromote = (yield* Clock.currentTimeMillis) - promoted
          const acceptedThen = load.statuses().accepted ?? 0
          yield* stack.step(
            "more prospects accepted on the new primary",
            eventually(
              Effect.sync(() => load.statuses().accepted ?? 0),
              (n) => n >= acceptedThen + 20,
            ),
            { context },
          )
          const report = yield* stack.step("load stopped", load.stop, { context })
          yield* stack.assertAlive
          const [served] = yield* query(
            (sql) => sql<Array<{ port: number; standby: boolean }>>`
              select current_setting('port')::int as port, pg_is_in_recovery() as standby`,
          )
          assert.deepStrictEqual(
            served,
            { port: pair.standbyPort, standby: false },
            "the promoted standby serves",
          )

          yield* stack.step(
            "the outbox empties",
            eventually(
              query(
                (sql) =>
                  sql<Array<{ n: number }>>`select count(*)::int as n from outbox where sent_at is null`,
              ),
              ([row]) => row!.n === 0,
            ),
          )
          /** When a step is stuck: the workers' last warnings and errors, and the consumers holding messages. */
          const diagnose = Effect.gen(function* () {
            const reports = yield* nats.streamReports.pipe(Effect.orElseSucceed(() => []))
            return {
              holding: reports.flatMap((r) =>
                r.consumers
                  .filter((c) => c.ackPending > 0)
                  .map((c) => `${c.name} ${c.ackPending} of ${c.pending}`),
              ),
              workers: stack
                .workers()
                .process.stdout()
                .split("\n")
                .filter((l) => l.includes('"level":"WARN"') || l.includes('"level":"ERROR"'))
                .slice(-25),
            }
          })
          // A prospect whose decision the failover lost is asked for again after a minute `processing`.
          const prospects = yield* stack.step(
            "no prospect left processing",
            eventually(
              query(
                (sql) => sql<Array<{ source_prospect_id: string; status: string }>>`
                  select source_prospect_id, status from prospects where source = ${source}`,
              ),
              (rows) => rows.every((r) => r.status !== "processing"),
            ),
            { seconds: 150, diagnose },
          )
          yield* stack.step(
            "the outbox empties again",
            eventually(
              query(
                (sql) =>
                  sql<Array<{ n: number }>>`select count(*)::int as n from outbox where sent_at is null`,
              ),
              ([row]) => row!.n === 0,
            ),
          )

          // Every event the endpoint subscribes to that EVENTS holds now, by its id.
          const stream = nats.streamName("EVENTS")
          const state = yield* nats.streamState(stream)
          const stored = yield* nats.readStored(
            stream,
            nats.subject(`events.${slug}.>`),
            new Date(0),
            state.lastSeq,
          )
          const events = stored
            .filter((m) => EVENTS.some((e) => m.subject.endsWith(`.${e}`)))
            .map((m) => m.headers?.get("Nats-Msg-Id") ?? "")
          const deliveries = yield* stack.step(
            "a delivery for every event in EVENTS, every one delivered",
            eventually(
              query(
                (sql) => sql<Array<{ event_id: string; status: string }>>`
                  select event_id, status from webhook_deliveries where endpoint_id = ${endpointId}`,
              ),
              (rows) => {
                const routed = new Set(rows.map((r) => r.event_id))
                return events.every((id) => routed.has(id)) && rows.every((r) => r.status === "delivered")
              },
            ),
            { context: () => ({ events: events.length }), diagnose },
          )
          yield* stack.assertAlive

          const storedIds = new Set(prospects.map((r) => r.source_prospect_id))
          const lost = report.accepted.filter((id) => !storedIds.has(id))
          const routed = new Set(deliveries.map((r) => r.event_id))
          const workersOut = stack.workers().process.stdout()
          const reread = logged(
            workersOut,
            "actor messages past their checkpoint read back and handled again",
          )
          const askedAgain = logged(workersOut, "prospects left processing asked for their decision again")
          const bodies = new Map<string, number>()
          for (const r of receiver.received(path)) {
            const key = r.body.toString("utf8")
            bodies.set(key, (bodies.get(key) ?? 0) + 1)
          }
          yield* recordFigure("failover asynchronous: answers", report.statuses)
          yield* recordFigure("failover asynchronous: replication lag as the primary died", {
            lagMs: LAG_MS,
            ...lag,
          })
          yield* recordFigure("failover asynchronous: prospects", {
            acceptedBeforeKill: acceptedBefore,
            firstAcceptedAfterPromoteMs: firstAfterPromote,
            accepted: report.accepted.length,
            stored: report.accepted.length - lost.length,
            lostWithTheirCommits: lost.length,
            processing: prospects.filter((r) => r.status === "processing").length,
            askedForTheirDecisionAgain: askedAgain.reduce((n, a) => n + Number(a.prospects), 0),
          })
          yield* recordFigure("failover asynchronous: events and deliveries", {
            eventsInEvents: events.length,
            deliveries: deliveries.length,
            eventsWithoutDelivery: events.filter((id) => !routed.has(id)).length,
            routerRereadFromCheckpoint: reread
              .filter((a) => a.actor === "webhook_router")
              .reduce((n, a) => n + Number(a.messages), 0),
            deliveriesMadeByTheReread: reread
              .filter((a) => a.actor === "webhook_router")
              .reduce((n, a) => n + Number(a.made), 0),
            requestsAtReceiver: receiver.received(path).length,
            eventsReceivedMoreThanOnce: [...bodies.values()].filter((n) => n > 1).length,
          })
          assert.deepStrictEqual(
            report.serverErrors,
            [],
            "no 5xx other than 503, and no request left unanswered",
          )
        }),
    )
  })
})

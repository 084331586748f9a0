import { assert, describe, it, layer } from "@effect/vitest"
import { Clock, Effect, Fiber } from "effect"
import { connect } from "../../backend/platform/Db.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import { assertAcceptedDelivered, deadLetters, prospectLoad, prospectOf } from "../support/FaultLoad.ts"
import { audienceOf, requestToken } from "../support/Auth.ts"
import { awaitLogged, envelope, ingestSetUp, prospectUpdate, send } from "../support/Ingest.ts"
import { prospectSetUp } from "../support/Prospects.ts"
import { startReceiver } from "../support/Receiver.ts"
import { privatePostgres } from "../support/PrivatePostgres.ts"
import { postJson, query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

const OUTAGE_MS = 15_000

/** Polls `probe` until it holds; how long that took from `since` (ms). */
const recoveredAfter = (since: number, probe: Effect.Effect<boolean>) =>
  Effect.gen(function* () {
    yield* eventually(probe, (ok) => ok)
    return (yield* Clock.currentTimeMillis) - since
  })

const status = (port: number, path: string) =>
  Effect.promise(() =>
    fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) }).then(
      (r) => r.status,
      () => 0,
    ),
  )

describe("Postgres stopped for 15 s under load", () => {
  layer(faultStackLayer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    for (const mode of ["fast", "immediate"] as const) {
      it.effect(
        `pg_ctl stop -m ${mode}: both processes keep running, no 500 is answered, nothing accepted is lost, and everything works again`,
        () =>
          Effect.gen(function* () {
            const stack = yield* FaultStack
            yield* Effect.addFinalizer(() => stack.restore)
            const receiver = yield* startReceiver
            const source = `pg-${mode}`
            const { partner, slug } = yield* prospectSetUp(`org-pg-${mode}`, source)
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

            const load = yield* prospectLoad(partner, slug, source)
            const context = () => ({ load: load.statuses(), received: receiver.received(path).length })
            // Some traffic before the fault, so the pools hold connections (and the actors leases) when it lands.
            yield* stack.step(
              "load delivered before the fault",
              eventually(
                Effect.sync(() => receiver.received(path).length),
                (n) => n >= 5,
              ),
              { context },
            )
            // An ingestion client that sent one event before the fault: the gateway has read its access and mapping.
            const ingestSource = `pg-ingest-${mode}`
            const ingest = yield* ingestSetUp(`org-pg-ingest-${mode}`, ingestSource)
            const events = Array.from({ length: 21 }, (_, i) =>
              envelope(ingestSource, prospectUpdate(`ingest-${i}`, "2026-01-10T10:00:00Z")),
            )
            const eventIds = [yield* send(ingest, events[0])]

            yield* stack.step(`pg_ctl stop -m ${mode}`, stack.postgres.stop(mode))
            // Past the few seconds the gateway caches a client's access and a source's mapping for.
            yield* Effect.sleep("7 seconds")
            const during = yield* stack.step(
              "the ingestion gateway accepts events; /token answers in OAuth's shape",
              Effect.all({
                accepted: Effect.forEach(events.slice(1), (body) => send(ingest, body)),
                token: Effect.flatMap(audienceOf("ingest"), (audience) =>
                  requestToken(stack.gateways().ports["ingest-api"]!, {
                    grant_type: "client_credentials",
                    client_id: ingest.client.clientId,
                    client_secret: "not-the-secret",
                    audience,
                  }),
                ),
              }),
            )
            eventIds.push(...during.accepted)
            assert.strictEqual(during.token.status, 503, during.token.text)
            assert.strictEqual(during.token.headers.get("retry-after"), "2")
            assert.strictEqual(JSON.parse(during.token.text).error, "temporarily_unavailable")
            yield* stack.step("outage", Effect.sleep(`${OUTAGE_MS - 7_000} millis`))
            yield* stack.step("pg_ctl start", stack.postgres.start)
            const back = yield* Clock.currentTimeMillis

            // Recovery, measured from Postgres's return: readiness, a GET and a POST answered, and a prospect posted
            // after the return decided and its webhook delivered (the outbox, the actors, the delivery engine).
            const partnerPort = stack.gateways().ports["partner-api"]!
            const recovered: Record<string, number> = {}
            const probe = (name: string, check: Effect.Effect<boolean>) =>
              Effect.flatMap(recoveredAfter(back, check), (ms) =>
                Effect.sync(() => void (recovered[name] = ms)),
              )
            yield* stack.step(
              "recovery",
              Effect.all(
                [
                  probe(
                    "readyz",
                    Effect.map(status(partnerPort, "/readyz"), (s) => s === 200),
                  ),
                  probe(
                    "get",
                    Effect.sync(() => load.getOkSince(back)),
                  ),
                  probe(
                    "post",
                    Effect.sync(() => load.postOkSince(back)),
                  ),
                  probe(
                    "webhook_delivered",
                    Effect.sync(() => {
                      const id = load.acceptedSince(back)
                      return (
                        id !== undefined && receiver.received(path).some((r) => prospectOf(r.body) === id)
                      )
                    }),
                  ),
                ],
                { concurrency: "unbounded", discard: true },
              ),
              { seconds: 60, context: () => ({ ...context(), recovered_ms: recovered }) },
            )
            // A little more load after the return, then the load stops.
            yield* Effect.sleep("3 seconds")
            const report = yield* stack.step("load stops", load.stop, { context })
            yield* stack.assertAlive
            assert.deepStrictEqual(
              report.serverErrors,
              [],
              JSON.stringify({ statuses: report.statuses, errors: report.serverErrors }),
            )
            assert.strictEqual(report.statuses["POST error"] ?? 0, 0, "a POST got no answer")
            assert.strictEqual(report.statuses["GET error"] ?? 0, 0, "a GET got no answer")

            // Every accepted prospect is stored once and decided, and its webhook delivered.
            const accepted = new Set(report.accepted)
            const { totals, duplicates } = yield* assertAcceptedDelivered(stack, {
              source,
              accepted,
              endpointId,
              receiver,
              path,
            })
            assert.strictEqual(yield* deadLetters, 0)
            // Every event accepted during the outage is applied once Postgres is back.
            const applied = yield* stack.step(
              "ingested events applied",
              awaitLogged(ingestSource, eventIds),
              {
                context: () => ({
                  sent: eventIds.length,
                  workers: stack
                    .workers()
                    .process.stdout()
                    .split("\n")
                    .filter((l) => /ingest|WARN|ERROR/.test(l))
                    .slice(-25),
                }),
                // How many events are logged, and what each busy session of the service does or waits for.
                diagnose: query((sql) =>
                  Promise.all([
                    sql`select outcome, count(*)::int as events from ingest_log
                        where event_id = any(${eventIds}) group by outcome`,
                    sql`select application_name, state, wait_event_type, wait_event, left(query, 120) as query,
                               now() - xact_start as in_transaction_for
                        from pg_stat_activity
                        where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`,
                  ]),
                ).pipe(
                  Effect.timeout("10 seconds"),
                  Effect.catchCause(() => Effect.succeed("Postgres did not answer")),
                ),
              },
            )
            // Applied once each. A batch that committed as Postgres stopped, before the handler heard so, is handed
            // back and comes again: that copy is logged `duplicate`.
            assert.deepStrictEqual(
              applied
                .filter((r) => r.outcome === "applied")
                .map((r) => r.event_id)
                .sort(),
              [...eventIds].sort(),
            )
            assert.deepStrictEqual(
              applied.filter((r) => r.outcome !== "applied" && r.outcome !== "duplicate"),
              [],
            )
            yield* stack.assertAlive

            yield* recordFigure(`postgres stop -m ${mode} (${OUTAGE_MS / 1000} s)`, {
              statuses: report.statuses,
              prospects_accepted: accepted.size,
              deliveries: totals.deliveries,
              duplicates_at_receiver: duplicates,
              recovered_ms: recovered,
            })
          }).pipe(Effect.scoped),
        180_000,
      )
    }
  })
})

describe("the postgres driver across a Postgres restart (infra/patches)", () => {
  it.live(
    "answers every reserve made while the server is away or coming back, none left waiting, and its pool serves again",
    () =>
      Effect.gen(function* () {
        const server = yield* privatePostgres
        // The service's pool with one connection: a reserve the driver loses, or a connection it hands to no one,
        // stops it.
        const sql = connect(server.url("postgres"), { max: 1 })
        yield* Effect.addFinalizer(() => Effect.promise(() => sql.end({ timeout: 1 })))
        yield* Effect.promise(() => sql`select 1`)
        yield* server.stop("fast")
        const outcomes: Array<"waiting" | "answered" | "refused"> = []
        const reserve = Effect.sync(() => {
          const i = outcomes.push("waiting") - 1
          sql.reserve().then(
            (connection) => {
              outcomes[i] = "answered"
              connection.release()
            },
            () => void (outcomes[i] = "refused"),
          )
        })
        // Reserves keep coming through the outage and its end, as a process's lease renewals and transactions do.
        const reserving = yield* Effect.forkChild(
          Effect.forever(Effect.andThen(reserve, Effect.sleep("150 millis"))),
        )
        yield* Effect.sleep("3 seconds")
        yield* server.start
        yield* Effect.sleep("1500 millis")
        yield* Fiber.interrupt(reserving)
        const waiting = () => outcomes.filter((o) => o === "waiting").length
        yield* eventually(Effect.sync(waiting), (n) => n === 0).pipe(
          Effect.timeoutOrElse({
            duration: "20 seconds",
            orElse: () => Effect.die(new Error(`${waiting()} of ${outcomes.length} reserves still waiting`)),
          }),
        )
        assert.include(outcomes, "refused")
        assert.include(outcomes, "answered")
        const [row] = yield* Effect.promise(() => sql<Array<{ one: number }>>`select 1 as one`)
        assert.strictEqual(row?.one, 1)
      }).pipe(Effect.scoped),
    60_000,
  )
})

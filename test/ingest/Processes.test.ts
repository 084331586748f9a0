import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Ref, type Scope } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { partitionOf } from "../../backend/platform/Partition.ts"
import { authEnv, authService } from "../support/Auth.ts"
import { type RunningProcess, spawnProcess } from "../support/ChildProcess.ts"
import {
  awaitLogged,
  envelope,
  expectedEventId,
  type IngestClient,
  ingestSetUp,
  postEvent,
  prospectRows,
  prospectUpdate,
  sourceMessages,
} from "../support/Ingest.ts"
import { freePort } from "../support/Net.ts"
import { privateNats } from "../support/PrivateNats.ts"
import { ENROLLMENT_HOST } from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** A service process (`backend/main.ts`) with `env`, once it has logged that it started. */
const serviceProcess = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const child = yield* spawnProcess(process.execPath, ["backend/main.ts"], {
      cwd: root,
      env: { ...env, LOG_LEVEL: "info" },
    })
    yield* child.waitFor("stdout", /started/)
    return child
  })

/**
 * Runs `body` against gateways connected to a nats-server of their own; `body` gets the server to stop, freeze
 * or restart it. The gateways are released before the server, so their clean-up still reaches it.
 */
const withPrivateNats = <A, E, R>(
  body: (server: {
    readonly process: RunningProcess
    readonly restart: Effect.Effect<RunningProcess, never, Scope.Scope>
  }) => Effect.Effect<A, E, R>,
) =>
  Effect.gen(function* () {
    const dir = mkdtempSync(join(tmpdir(), "ingest-nats-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    const port = yield* Effect.promise(freePort)
    const server = yield* privateNats(port, dir)
    const service = authService({
      env: authEnv({
        NATS_URL: `nats://127.0.0.1:${port}`,
        ROLES: "partner-api,ingest-api",
        ENROLLMENT_HOST,
      }),
    })
    return yield* body({ process: server, restart: privateNats(port, dir) }).pipe(
      Effect.provide(service.layer),
    )
  }).pipe(Effect.scoped)

/** POSTs `event` while the server is frozen (SIGSTOP), resuming it (SIGCONT) once the gateway has answered. */
const postWhileFrozen = (server: RunningProcess, client: IngestClient, event: unknown) =>
  Effect.gen(function* () {
    yield* server.signal("SIGSTOP")
    return yield* postEvent(client, event).pipe(Effect.ensuring(server.signal("SIGCONT")))
  })

describe("ingestion with NATS stalled", () => {
  it.live(
    // A publish JetStream did not acknowledge in time may still be stored when the server resumes (nothing can take
    // it back), so a 503 promises only that the event was not confirmed: the retry it asks for is stored once.
    "answers 503 when JetStream does not acknowledge in time, and stores the event once when the partner retries it",
    () =>
      withPrivateNats(({ process: server }) =>
        Effect.gen(function* () {
          const source = "stalled-retry"
          const setUp = yield* ingestSetUp("org-stalled-retry", source)
          const event = envelope(source, prospectUpdate("p-retry", "2026-01-10T11:00:00Z"))
          const refused = yield* postWhileFrozen(server, setUp.client, event)
          assert.strictEqual(refused.status, 503, refused.text)
          const retried = yield* eventually(postEvent(setUp.client, event), (a) => a.status !== 503)
          assert.strictEqual(retried.status, 202, retried.text)
          const eventId = expectedEventId(source, "ProspectUpdate", event.payload)
          assert.strictEqual(retried.text, `{"status_code":202,"event_id":"${eventId}"}`)
          const stored = (yield* sourceMessages(source)).map((m) => m.headers["Nats-Msg-Id"])
          assert.deepStrictEqual(stored, [eventId])
        }),
      ),
    90_000,
  )
})

describe("ingestion with NATS down", () => {
  it.live(
    "answers 503 with Retry-After and stores nothing while NATS is down, and accepts again once it is back",
    () =>
      withPrivateNats(({ process: first, restart }) =>
        Effect.gen(function* () {
          const source = "down"
          const setUp = yield* ingestSetUp("org-down", source)
          const id = (event: { payload: unknown }) => expectedEventId(source, "ProspectUpdate", event.payload)
          const before = envelope(source, prospectUpdate("p-down", "2026-01-10T10:00:00Z"))
          const accepted = yield* postEvent(setUp.client, before)
          assert.strictEqual(accepted.status, 202, accepted.text)

          yield* first.signal("SIGTERM")
          yield* first.exited

          const during = envelope(source, prospectUpdate("p-down", "2026-01-10T11:00:00Z"))
          const refused = yield* postEvent(setUp.client, during)
          assert.strictEqual(refused.status, 503, refused.text)
          assert.match(refused.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/, "no Retry-After")
          const body = JSON.parse(refused.text) as Record<string, unknown>
          assert.deepStrictEqual(Object.keys(body), ["status_code", "error"])
          assert.strictEqual(body.status_code, 503)

          // The same port and store: the stream and its first event are still there. Each attempt until one is
          // accepted is an event of its own, so an attempt answered 503 but stored later would show.
          yield* restart
          const refusedIds = [id(during)]
          let attempt = 0
          const again = yield* eventually(
            Effect.gen(function* () {
              const event = envelope(
                source,
                prospectUpdate("p-down", `2026-01-10T12:00:00.${String(attempt++).padStart(3, "0")}Z`),
              )
              const answer = yield* postEvent(setUp.client, event)
              if (answer.status === 503) refusedIds.push(id(event))
              return { answer, event }
            }),
            ({ answer }) => answer.status !== 503,
          )
          assert.strictEqual(again.answer.status, 202, again.answer.text)

          const stored = (yield* sourceMessages(source)).map((m) => m.headers["Nats-Msg-Id"])
          for (const refusedId of refusedIds) {
            assert.notInclude(stored, refusedId, "an event answered 503 was stored after all")
          }
          assert.deepStrictEqual(stored, [id(before), id(again.event)])
        }),
      ),
    90_000,
  )
})

/** Events per prospect and prospects: enough for both workers to interleave, bounded by the test's time. */
const PROSPECTS = 4
const EVENTS_PER_PROSPECT = 12

/** A fixed shuffle of 0..n-1 (so a failure can be replayed): the minutes of one prospect's events, in POST order. */
const shuffled = (n: number, seed: number) => {
  const order = Array.from({ length: n }, (_, i) => i)
  let state = seed
  for (let i = n - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31
    const j = state % (i + 1)
    ;[order[i], order[j]] = [order[j]!, order[i]!]
  }
  return order
}

/** The API and gateways in the test; the workers only in two service processes of their own. */
const gateways = authService({ env: authEnv({ ROLES: "partner-api,ingest-api", ENROLLMENT_HOST }) })

describe("ingest workers in two processes", () => {
  layer(gateways.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "apply each prospect's events in stream order, the newest state winning, across a worker's restart",
      () =>
        Effect.gen(function* () {
          const workerEnv = { ...gateways.env, ROLES: "workers" }
          const workers = yield* Effect.all([serviceProcess(workerEnv), serviceProcess(workerEnv)], {
            concurrency: "unbounded",
          })
          const source = "two-workers"
          const setUp = yield* ingestSetUp("org-two-workers", source)

          // Both processes run the actor; each partition's leader (one of them) keeps a pull waiting on its consumer,
          // and the other takes the partition over when the leader stops.
          const nats = yield* Nats
          const client = yield* NatsClient
          const stream = nats.streamName("INGEST")
          yield* eventually(
            Effect.forEach(
              Array.from({ length: 16 }, (_, p) => p),
              (p) =>
                Effect.promise(() =>
                  client.jsm.consumers.info(stream, `ingest_p${p}`).then(
                    (info) => info.num_waiting,
                    () => 0,
                  ),
                ),
            ),
            (waiting) => waiting.every((n) => n >= 1),
          )
          // And they share the partitions: eight each, whichever started first.
          yield* eventually(
            query(
              (sql) => sql<Array<{ n: number }>>`
                select count(*)::int as n from pg_locks
                where locktype = 'advisory' and classid = 7239300 and granted
                  and database = (select oid from pg_database where datname = current_database())
                group by pid`,
            ),
            (leaders) => leaders.length === 2 && leaders.every((row) => row.n === 8),
          )

          // Round k holds event k of every prospect, so a round interleaves prospects.
          const events = Array.from({ length: EVENTS_PER_PROSPECT }, (_, k) =>
            Array.from({ length: PROSPECTS }, (_, p) => {
              const minute = shuffled(EVENTS_PER_PROSPECT, p + 7)[k]!
              return {
                prospect: `p-${p}`,
                minute,
                body: envelope(
                  source,
                  prospectUpdate(`p-${p}`, `2026-01-10T10:${String(minute).padStart(2, "0")}:00Z`, {
                    applicant: {
                      first_name: `m${minute}`,
                      last_name: "Roe",
                      email: "jane@example.com",
                      phone: "5551234567",
                    },
                  }),
                ),
              }
            }),
          ).flat()
          // Posted concurrently, so the stream holds each prospect's events out of time order.
          const post = (batch: typeof events) =>
            Effect.forEach(
              batch,
              (event) =>
                Effect.map(postEvent(setUp.client, event.body), (answer) => {
                  assert.strictEqual(answer.status, 202, answer.text)
                  return (JSON.parse(answer.text) as { event_id: string }).event_id
                }),
              { concurrency: 6 },
            )
          const half = events.length / 2
          const firstIds = yield* post(events.slice(0, half))
          // A rolling restart: the first worker is stopped (it drains) right after the first half is posted, the
          // second takes over whatever it hands back, and the second half arrives with one worker left.
          yield* workers[0]!.signal("SIGTERM")
          yield* workers[0]!.exited
          const ids = [...firstIds, ...(yield* post(events.slice(half)))]
          const log = yield* awaitLogged(source, ids)
          assert.strictEqual(log.length, events.length, "an event was logged more than once")

          const seqOf = new Map(
            (yield* sourceMessages(source)).map((m) => [m.headers["Nats-Msg-Id"]!, m.seq]),
          )
          const minuteOf = new Map(ids.map((id, i) => [id, events[i]!.minute]))
          for (let p = 0; p < PROSPECTS; p++) {
            const prospect = `p-${p}`
            const rows = log.filter((r) => r.source_prospect_id === prospect)
            assert.strictEqual(rows.length, EVENTS_PER_PROSPECT, prospect)
            const seqs = rows.map((r) => Number(r.stream_seq))
            for (const row of rows)
              assert.strictEqual(Number(row.stream_seq), seqOf.get(row.event_id), prospect)
            assert.deepStrictEqual(
              seqs,
              [...seqs].sort((a, b) => a - b),
              `${prospect}: log records not written in stream order`,
            )
            // Handled in stream order, an event applies exactly when it is newer than every one before it.
            let newest = -1
            const expected = rows.map((row) => {
              const minute = minuteOf.get(row.event_id)!
              const outcome = minute > newest ? "applied" : "stale"
              newest = Math.max(newest, minute)
              return [row.event_id, outcome]
            })
            assert.deepStrictEqual(
              rows.map((r) => [r.event_id, r.outcome]),
              expected,
              prospect,
            )
            const [row] = yield* prospectRows(source, prospect)
            assert.strictEqual(
              row!.first_name,
              `m${EVENTS_PER_PROSPECT - 1}`,
              `${prospect}: not the newest state`,
            )
            assert.strictEqual(
              row!.last_event_at,
              `2026-01-10T10:${String(EVENTS_PER_PROSPECT - 1).padStart(2, "0")}:00.000Z`,
            )
            assert.strictEqual(
              row!.version,
              expected.filter(([, outcome]) => outcome === "applied").length,
              `${prospect}: a stale event wrote the prospect`,
            )
          }
          assert.isTrue(yield* workers[1]!.groupRunning, "the second worker process ended")
        }).pipe(Effect.scoped),
      120_000,
    )

    it.effect(
      "a worker that stops hands back every message it was given and did not settle",
      () =>
        Effect.gen(function* () {
          const workerEnv = { ...gateways.env, ROLES: "workers" }
          const source = "stopping-worker"
          const setUp = yield* ingestSetUp("org-stopping-worker", source)
          const nats = yield* Nats
          const client = yield* NatsClient
          const stream = nats.streamName("INGEST")
          const consumers = Effect.forEach(
            Array.from({ length: 16 }, (_, p) => p),
            (p) =>
              Effect.promise(() =>
                client.jsm.consumers.info(stream, `ingest_p${p}`).then(
                  (info) => info,
                  () => undefined,
                ),
              ),
          )

          // One prospect per partition, so every partition is busy when the worker is told to stop.
          const prospects: Array<string> = []
          for (let i = 0; prospects.length < 16; i++) {
            const id = `p-stop-${i}`
            const partition = partitionOf(`${source}/${id}`, 16)
            if (!prospects.some((other) => partitionOf(`${source}/${other}`, 16) === partition)) {
              prospects.push(id)
            }
          }
          const sent = yield* Ref.make(0)
          const sendRound = Effect.gen(function* () {
            const n = yield* Ref.getAndUpdate(sent, (x) => x + 1)
            const at = new Date(Date.parse("2026-01-10T10:00:00Z") + n * 1000).toISOString()
            yield* Effect.forEach(
              prospects,
              (id) => postEvent(setUp.client, envelope(source, prospectUpdate(id, at))),
              { concurrency: "unbounded", discard: true },
            )
          })

          // Whether a stopping worker drops a message delivered to it depends on when the stop lands, so the
          // worker is started and stopped under load until three stops landed with messages given to it and not
          // settled (about every other stop does).
          const inFlight: Array<number> = []
          const landedInFlight = () => inFlight.filter((held) => held > 0).length
          for (let cycle = 0; cycle < 20 && landedInFlight() < 3; cycle++) {
            const worker = yield* serviceProcess(workerEnv)
            const sender = yield* Effect.forkChild(Effect.forever(sendRound))
            const floors = (yield* consumers).map((info) => info?.ack_floor.stream_seq ?? 0)
            // Stop the worker once it has settled something on every partition since it started.
            yield* eventually(consumers, (infos) =>
              infos.every((info, p) => info !== undefined && info.ack_floor.stream_seq > floors[p]!),
            )
            yield* worker.signal("SIGTERM")
            yield* worker.exited
            yield* Fiber.interrupt(sender)

            // With no worker left, a message still counted as pending was either nak'd back by the stopping worker
            // (JetStream keeps it pending until it is redelivered: at once, or after the handler's backoff of a few
            // seconds if it failed) or delivered to the stopped worker and dropped (nothing can be pulled from its
            // partition until the 30 s ack wait ends). A pull of 15 s, well inside the ack wait, tells them apart.
            const held = (yield* consumers).filter((info) => info !== undefined && info.num_ack_pending > 0)
            inFlight.push(held.length)
            const stuck: Array<string> = []
            for (const info of held) {
              const consumer = yield* Effect.promise(() => client.js.consumers.get(stream, info!.name))
              const redelivered = yield* Effect.promise(() => consumer.next({ expires: 15_000 }))
              if (redelivered === null) {
                stuck.push(`${info!.name}: stream_seq ${info!.delivered.stream_seq} delivered, not settled`)
              } else {
                redelivered.nak()
              }
            }
            assert.deepStrictEqual(
              stuck,
              [],
              `cycle ${cycle}: the stopped worker (exit ${JSON.stringify(yield* worker.exited)}) left messages ` +
                `unacknowledged; its log ended:\n${worker.stdout().split("\n").slice(-15).join("\n")}\n${worker.stderr()}`,
            )
          }
          // Else little above was checked: the stops landed with nothing given to the worker and unsettled.
          assert.strictEqual(landedInFlight(), 3, `partitions holding messages after each stop: ${inFlight}`)
        }).pipe(Effect.scoped),
      240_000,
    )
  })
})

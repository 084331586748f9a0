import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { registry } from "../../backend/platform/Observability.ts"
import { call, consoleService, operatorSession } from "../support/Operator.ts"
import { eventually } from "../support/Streams.ts"
import { endpoint, owner, provider, query, subscriber } from "../support/WebhookEngine.ts"

interface DeadLetterRow {
  readonly id: string
  readonly actor: string
  readonly subject: string
  readonly stream_seq: string
  readonly reason: string
}

const deadLetters = query(
  (sql) =>
    sql<Array<DeadLetterRow>>`select id, actor, subject, stream_seq, reason from dead_letters order by id`,
)

describe("the system page's API", () => {
  layer(consoleService({ ROLES: "console,workers" }).layer, { excludeTestServices: true, timeout: 120_000 })(
    (it) => {
      it.effect(
        "lists every stream and consumer, and a dead letter an operator publishes again, audited; a viewer may not",
        () =>
          Effect.gen(function* () {
            const nats = yield* Nats
            const viewer = yield* operatorSession("viewer@system.test", "viewer")
            const operator = yield* operatorSession("operator@system.test", "operator")
            // The router cannot decode this body: it terminates the message, which becomes a dead letter.
            const ack = yield* nats.publish(
              nats.subject("events.acme.prospect.ready"),
              Buffer.from("not json"),
            )
            const [dead] = yield* eventually(deadLetters, (rows) => rows.length === 1)
            assert.strictEqual(dead!.stream_seq, String(ack.seq))

            const shown = yield* call("GET", "/api/system", viewer)
            assert.strictEqual(shown.status, 200, shown.text)
            const events = shown.body.streams.find(
              (s: { name: string }) => s.name === nats.streamName("EVENTS"),
            )
            assert.deepStrictEqual(events.subjects, [nats.subject("events.>")])
            assert.isAtLeast(events.messages, 1)
            assert.strictEqual(events.last_seq, ack.seq)
            assert.strictEqual(events.limits.discard, "new")
            const router = events.consumers.find((c: { name: string }) => c.name === "webhook_router_p0")
            assert.deepInclude(router, {
              pending: 0,
              ack_pending: 0,
              oldest_unacknowledged_seconds: null,
              flag: null,
            })
            assert.isString(router.last_active_at)
            assert.deepStrictEqual(
              shown.body.streams.map((s: { name: string }) => s.name).sort(),
              ["DOCUMENTS", "ELIGIBILITY", "EVENTS", "INGEST", "ROSTER", "WEBHOOKS"]
                .map((b) => nats.streamName(b))
                .sort(),
            )
            assert.deepInclude(shown.body.outbox, { backlog: 0, oldest_at: null, flag: null })
            assert.strictEqual(shown.body.dead_letters.total, 1)
            assert.deepInclude(shown.body.dead_letters.items[0], {
              id: Number(dead!.id),
              actor: "webhook_router",
              subject: "events.acme.prospect.ready",
              delivery_count: 1,
              retries: 0,
              retried_at: null,
            })
            assert.match(shown.body.dead_letters.items[0].reason, /undecodable/)

            assert.strictEqual((yield* call("GET", "/api/system")).status, 401)
            const refused = yield* call("POST", `/api/dead-letters/${dead!.id}/retry`, viewer)
            assert.strictEqual(refused.status, 403)
            const noToken = yield* call("POST", `/api/dead-letters/${dead!.id}/retry`, {
              cookie: operator.cookie,
            })
            assert.strictEqual(noToken.status, 403)
            const missing = yield* call("POST", "/api/dead-letters/999999999/retry", operator)
            assert.strictEqual(missing.status, 404)
            assert.strictEqual(missing.body.error, "Dead letter not found.")

            const retried = yield* call("POST", `/api/dead-letters/${dead!.id}/retry`, operator)
            assert.strictEqual(retried.status, 200, retried.text)
            assert.deepInclude(retried.body.dead_letter, { id: Number(dead!.id), retries: 1 })
            assert.isString(retried.body.dead_letter.retried_at)

            // Published again, read again by the router as a new message: still undecodable, so a second dead letter.
            const [audit] = yield* query(
              (sql) => sql<
                Array<{ actor: string; channel: string; details: { stream_seq: number }; after: unknown }>
              >`
                select actor, channel, details, after from audit_log
                where action = 'dead_letters.retry' and target = ${`dead_letter:${dead!.id}`}`,
            )
            assert.deepInclude(audit, {
              actor: "operator@system.test",
              channel: "console",
              after: { retries: 1 },
            })
            const rows = yield* eventually(deadLetters, (rows) => rows.length === 2)
            assert.deepInclude(rows[1], {
              actor: "webhook_router",
              subject: "events.acme.prospect.ready",
              stream_seq: String(audit!.details.stream_seq),
            })
            assert.isAbove(audit!.details.stream_seq, ack.seq)
          }),
      )
    },
  )
})

/** The workers' loops: the relay, the retry scheduler and every actor. */
const LOOPS = [
  "actor:documents",
  "actor:eligibility",
  "actor:ingest",
  "actor:webhook_delivery",
  "actor:webhook_router",
  "outbox_relay",
  "retry_scheduler",
]

describe("the workers' loops", () => {
  layer(consoleService({ ROLES: "console,workers" }).layer, { excludeTestServices: true, timeout: 60_000 })(
    (it) => {
      it.effect(
        "/metrics and the system page show every loop with a pass in the last minute, none flagged",
        () =>
          Effect.gen(function* () {
            const viewer = yield* operatorSession("loops@system.test", "viewer")
            const started = (yield* Clock.currentTimeMillis) / 1000
            const gauge = yield* eventually(
              Effect.promise(() => registry.metrics()),
              (text) =>
                LOOPS.every((loop) => text.includes(`loop_last_pass_timestamp_seconds{loop="${loop}"}`)),
            )
            for (const loop of LOOPS) {
              const line = gauge
                .split("\n")
                .find((l) => l.startsWith(`loop_last_pass_timestamp_seconds{loop="${loop}"}`))
              const passedAt = Number(line!.split(" ").at(-1))
              assert.isAtLeast(passedAt, started - 60, loop)
            }
            const shown = yield* eventually(
              call("GET", "/api/system", viewer),
              (answer) =>
                answer.status === 200 &&
                LOOPS.every((loop) => answer.body.loops.some((l: { loop: string }) => l.loop === loop)),
            )
            assert.strictEqual(shown.body.thresholds.loop_pass_seconds, 60)
            for (const pass of shown.body.loops) {
              assert.isAtMost(pass.seconds_ago, 60, pass.loop)
              assert.isNull(pass.flag, pass.loop)
              assert.isString(pass.process)
            }
          }),
      )
    },
  )
})

describe("the system page's outbox", () => {
  layer(consoleService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("counts rows committed and not yet published, and flags the oldest past its threshold", () =>
      Effect.gen(function* () {
        const viewer = yield* operatorSession("outbox@system.test", "viewer")
        // No workers in this service: nothing publishes these rows.
        yield* query(
          (sql) => sql`
            insert into outbox (key, partition, subject, payload, created_at)
            values ('k1', 0, 'roster.acme.owner.created', '\\x7b7d', now() - interval '2 minutes'),
                   ('k2', 1, 'roster.acme.owner.created', '\\x7b7d', now())`,
        )
        const shown = yield* call("GET", "/api/system", viewer)
        assert.strictEqual(shown.status, 200, shown.text)
        assert.strictEqual(shown.body.outbox.backlog, 2)
        assert.isAtLeast(shown.body.outbox.oldest_seconds, 110)
        assert.match(shown.body.outbox.flag, /oldest unpublished row older than 60 s/)
      }),
    )

    it.effect(
      "sums the deliveries not settled yet by status, names the oldest, and the five endpoints with the most",
      () =>
        Effect.gen(function* () {
          const viewer = yield* operatorSession("backlog@system.test", "viewer")
          const acme = yield* owner("backlog-acme")
          const ownerSub = yield* subscriber({ ownerId: acme.id })
          const prov = yield* provider("Backlog Provider", { owners: [acme.id] })
          const providerSub = yield* subscriber({ providerId: prov })
          const ids: Array<number> = []
          for (let i = 0; i < 7; i++)
            ids.push(yield* endpoint(i === 6 ? providerSub.id : ownerSub.id, `https://example.test/${i}`, []))
          // Endpoint i has i + 1 waiting deliveries; each endpoint's also has one delivered and one failed,
          // which are settled. The first endpoint's is held, the second's retried by hand (series 2), the
          // third's retrying, the fourth's rate limited, the rest pending; the oldest is on the sixth.
          yield* query(
            (sql) => sql`
              insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, series,
                                              created_at, held_since)
              select (${ids}::bigint[])[1 + e], 'backlog-' || e || '-' || n, 'policy.created', 'backlog-acme',
                     convert_to('{}', 'UTF8'),
                     case when e = 2 then 'retrying' when e = 3 then 'rate_limited' else 'pending' end,
                     case when e = 1 then 2 else 1 end,
                     now() - (case when e = 5 then 3600 else 60 + n end) * interval '1 second',
                     case when e = 0 then now() end
              from generate_series(0, 6) e cross join lateral generate_series(0, e) n
              union all
              select (${ids}::bigint[])[1 + e], 'settled-' || e || '-' || s, 'policy.created', 'backlog-acme',
                     convert_to('{}', 'UTF8'), s, 1, now() - interval '2 hours', null
              from generate_series(0, 6) e cross join unnest(array['delivered', 'failed']) s`,
          )
          const [oldest] = yield* query(
            (sql) => sql<Array<{ id: string }>>`
              select id from webhook_deliveries where event_id = 'backlog-5-0'`,
          )
          const shown = yield* call("GET", "/api/system", viewer)
          assert.strictEqual(shown.status, 200, shown.text)
          const backlog = shown.body.deliveries
          assert.deepInclude(backlog, {
            waiting: 28,
            held: 1,
            retrying: 2 + 3,
            rate_limited: 4,
            pending: 5 + 6 + 7,
            endpoint_count: 7,
          })
          assert.deepInclude(backlog.oldest, { id: Number(oldest!.id), endpoint_id: ids[5] })
          assert.isAtLeast(backlog.oldest.seconds, 3590)
          assert.deepStrictEqual(
            backlog.endpoints.map((e: { endpoint_id: number; waiting: number }) => [
              e.endpoint_id,
              e.waiting,
            ]),
            [7, 6, 5, 4, 3].map((n) => [ids[n - 1], n]),
          )
          assert.deepInclude(backlog.endpoints[0], {
            endpoint_name: "test endpoint",
            owner_slug: null,
            provider_name: "Backlog Provider",
            pending: 7,
            held: 0,
          })
          assert.deepInclude(backlog.endpoints[3], {
            owner_slug: "backlog-acme",
            rate_limited: 4,
            pending: 0,
          })
          assert.deepInclude(backlog.endpoints[1], { pending: 6 })
          assert.isAtLeast(backlog.endpoints[1].oldest_seconds, 3590)
        }),
    )

    it.effect("flags a loop whose process reports no pass for more than a minute", () =>
      Effect.gen(function* () {
        const viewer = yield* operatorSession("stalled@system.test", "viewer")
        yield* query(
          (sql) => sql`
            insert into loop_passes (process, loop, passed_at, reported_at)
            values ('worker-a/1', 'outbox_relay', now() - interval '3 minutes', now()),
                   ('worker-a/1', 'retry_scheduler', now(), now()),
                   ('gone/2', 'outbox_relay', now() - interval '10 minutes', now() - interval '10 minutes')`,
        )
        const shown = yield* call("GET", "/api/system", viewer)
        assert.strictEqual(shown.status, 200, shown.text)
        assert.deepStrictEqual(
          shown.body.loops.map((l: { loop: string; process: string; flag: string | null }) => [
            l.loop,
            l.process,
            l.flag,
          ]),
          [
            ["outbox_relay", "worker-a/1", "no pass for more than 60 s"],
            ["retry_scheduler", "worker-a/1", null],
          ],
        )
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { Retention } from "../../backend/operator/Retention.ts"
import { Db } from "../../backend/platform/Db.ts"
import { authEnv, authService, createOwner } from "../support/Auth.ts"
import { captureLogs } from "../support/Logs.ts"
import { call, operatorSession } from "../support/Operator.ts"
import { startReceiver, testCa } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import { enginePlatform, endpoint, owner, query, subscriber } from "../support/WebhookEngine.ts"
import { api, createEndpoint, ownerEndpoints, webhookPartner } from "../support/Webhooks.ts"

const DAY_MS = 86_400_000

/** `count` deliveries of `endpointId` in `status`, created `ageMs` ago, each with two attempts; their ids. */
const deliveries = (
  endpointId: number,
  count: number,
  status: "delivered" | "failed" | "retrying" | "pending",
  ageMs: number,
  fields: { readonly held?: boolean } = {},
) =>
  Effect.gen(function* () {
    const rows = yield* query(
      (sql) => sql<Array<{ id: string }>>`
        insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, attempt_number,
                                        next_retry_at, held_since, created_at)
        select ${endpointId}, gen_random_uuid()::text, 'policy.created', 'acme', convert_to('{}', 'UTF8'),
               ${status}, 2,
               ${status === "retrying" ? new Date(Date.now() + DAY_MS) : null},
               ${fields.held === true ? new Date(Date.now() - ageMs) : null},
               now() - make_interval(secs => ${ageMs / 1000})
        from generate_series(1, ${count})
        returning id`,
    )
    const ids = rows.map((row) => row.id)
    yield* query(
      (sql) => sql`
        insert into webhook_attempts (delivery_id, series, attempt_number, started_at, status_code, duration_ms)
        select id, 1, n, now(), 500, 10 from unnest(${ids}::bigint[]) id cross join generate_series(1, 2) n`,
    )
    return ids
  })

const remaining = (ids: ReadonlyArray<string>) =>
  query(
    (sql) => sql<Array<{ id: string; attempts: number }>>`
      select d.id::text, (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as attempts
      from webhook_deliveries d where d.id = any(${ids}::bigint[]) order by d.id`,
  )
const attemptsOf = (ids: ReadonlyArray<string>) =>
  query(
    (sql) => sql<Array<{ n: number }>>`
      select count(*)::int as n from webhook_attempts where delivery_id = any(${ids}::bigint[])`,
  ).pipe(Effect.map(([row]) => row!.n))

const anEndpoint = (slug: string) =>
  Effect.gen(function* () {
    const acme = yield* owner(slug)
    const sub = yield* subscriber({ ownerId: acme.id })
    return yield* endpoint(sub.id, "https://127.0.0.1:9/never", ["policy.created"])
  })

const sweep = (batch?: number) =>
  Effect.flatMap(Effect.service(Retention), (retention) => retention.sweep(batch))

/** The sweep's own services on a database of their own; no worker runs, so each test sweeps when it wants. */
const platform = enginePlatform({ DEAD_LETTER_RETENTION_DAYS: "7", RETENTION_SWEEP_SECONDS: "1" })
const servicesLayer = Retention.layer.pipe(Layer.provideMerge(platform.layer))

describe("the retention sweep", () => {
  layer(servicesLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "deletes finished deliveries created before the retention with their attempts, and keeps the rest",
      () =>
        Effect.gen(function* () {
          const id = yield* anEndpoint("acme-deliveries")
          const expired = [
            ...(yield* deliveries(id, 5, "delivered", 31 * DAY_MS)),
            ...(yield* deliveries(id, 3, "failed", 40 * DAY_MS)),
          ]
          const recent = [
            ...(yield* deliveries(id, 2, "delivered", 29 * DAY_MS)),
            ...(yield* deliveries(id, 1, "failed", DAY_MS)),
          ]
          const underWay = [
            ...(yield* deliveries(id, 2, "retrying", 40 * DAY_MS)),
            ...(yield* deliveries(id, 1, "pending", 40 * DAY_MS, { held: true })),
          ]
          const pruned = yield* sweep(2)
          assert.strictEqual(pruned.deliveries, expired.length)
          assert.strictEqual((yield* remaining(expired)).length, 0)
          assert.strictEqual(yield* attemptsOf(expired), 0)
          const kept = [...recent, ...underWay].sort((a, b) => Number(a) - Number(b))
          assert.deepStrictEqual(
            [...(yield* remaining(kept))],
            kept.map((id) => ({ id, attempts: 2 })),
          )
        }),
    )

    it.effect(
      "deletes bulk retries that finished before the retention with their items, not running ones",
      () =>
        Effect.gen(function* () {
          const job = (status: string, finishedAgoMs: number | null) =>
            query(
              (sql) => sql<Array<{ id: string }>>`
              insert into bulk_retries (filter, rate_per_second, status, total, done, snapshot_complete,
                                        created_by, created_at, finished_at)
              values ('{}', 5, ${status}, 3, 3, true, 'ops@example.com', now() - interval '60 days',
                      ${finishedAgoMs === null ? null : new Date(Date.now() - finishedAgoMs)})
              returning id`,
            ).pipe(
              Effect.tap(([row]) =>
                query(
                  (sql) => sql`
                  insert into bulk_retry_items (bulk_retry_id, position, delivery_id)
                  select ${row!.id}, n, n from generate_series(0, 2) n`,
                ),
              ),
              Effect.map(([row]) => row!.id),
            )
          const expired = [yield* job("completed", 31 * DAY_MS), yield* job("canceled", 45 * DAY_MS)]
          const kept = [yield* job("completed", 29 * DAY_MS), yield* job("running", null)]
          const pruned = yield* sweep(2)
          assert.strictEqual(pruned.bulk_retry_rows, 2 * 3 + 2)
          const jobs = yield* query(
            (sql) => sql<Array<{ id: string; items: number }>>`
            select b.id::text, (select count(*)::int from bulk_retry_items i where i.bulk_retry_id = b.id) as items
            from bulk_retries b where b.id = any(${[...expired, ...kept]}::bigint[]) order by b.id`,
          )
          assert.deepStrictEqual(
            [...jobs],
            kept.map((id) => ({ id, items: 3 })),
          )
        }),
    )

    it.effect(
      "deletes replays that ended before the retention with the event bodies they copied, not running ones",
      () =>
        Effect.gen(function* () {
          const endpointId = yield* anEndpoint("acme-replays")
          const replay = (status: string, endedAgoMs: number | null) =>
            query(
              (sql) => sql<Array<{ id: string }>>`
              insert into webhook_replays (endpoint_id, since, until, events, status, total, sent, created_at,
                                           ended_at)
              values (${endpointId}, now() - interval '70 days', now() - interval '60 days', '{policy.created}',
                      ${status}, 3, 3, now() - interval '60 days',
                      ${endedAgoMs === null ? null : new Date(Date.now() - endedAgoMs)})
              returning id`,
            ).pipe(
              Effect.tap(([row]) =>
                query(
                  (sql) => sql`
                  insert into webhook_replay_events (replay_id, seq, event_id, event, owner_slug, payload)
                  select ${row!.id}, n, 'evt-' || n, 'policy.created', 'acme', convert_to('{}', 'UTF8')
                  from generate_series(1, 3) n`,
                ),
              ),
              Effect.map(([row]) => row!.id),
            )
          const expired = [yield* replay("completed", 31 * DAY_MS), yield* replay("canceled", 45 * DAY_MS)]
          const kept = [yield* replay("completed", 29 * DAY_MS), yield* replay("running", null)]
          const pruned = yield* sweep(2)
          assert.strictEqual(pruned.replay_rows, 2 * 3 + 2)
          const replays = yield* query(
            (sql) => sql<Array<{ id: string; events: number }>>`
            select r.id::text,
                   (select count(*)::int from webhook_replay_events e where e.replay_id = r.id) as events
            from webhook_replays r where r.id = any(${[...expired, ...kept]}::bigint[]) order by r.id`,
          )
          assert.deepStrictEqual(
            [...replays],
            kept.map((id) => ({ id, events: 3 })),
          )
        }),
    )

    it.effect("deletes dead letters older than DEAD_LETTER_RETENTION_DAYS", () =>
      Effect.gen(function* () {
        const letter = (seq: number, ageDays: number) =>
          query(
            (sql) => sql`
              insert into dead_letters (actor, stream, stream_seq, subject, payload, reason, delivery_count,
                                        created_at)
              values ('retention-test', 'EVENTS', ${seq}, 'events.acme.policy.created', '\\x00', 'undecodable', 1,
                      now() - make_interval(days => ${ageDays}))`,
          )
        for (const [seq, age] of [
          [1, 8],
          [2, 30],
          [3, 6],
          [4, 0],
        ] as const)
          yield* letter(seq, age)
        const pruned = yield* sweep()
        assert.strictEqual(pruned.dead_letters, 2)
        const left = yield* query(
          (sql) => sql<Array<{ stream_seq: string }>>`
            select stream_seq::text from dead_letters where actor = 'retention-test' order by stream_seq`,
        )
        assert.deepStrictEqual(
          left.map((row) => row.stream_seq),
          ["3", "4"],
        )
      }),
    )

    it.effect(
      "deletes console sessions past their 12 hours and sign-in failures outside the throttle's window",
      () =>
        Effect.gen(function* () {
          const [operator] = yield* query(
            (sql) => sql<Array<{ id: string }>>`
            insert into operators (email, role, password_hash) values ('sweep@example.com', 'viewer', 'x')
            returning id`,
          )
          const session = (name: string, ageMinutes: number, revoked: boolean) =>
            query(
              (sql) => sql`
              insert into operator_sessions (operator_id, token_hash, csrf_token, created_at, last_seen_at,
                                             revoked_at)
              values (${operator!.id}, sha256(convert_to(${name}, 'UTF8')), ${name},
                      now() - make_interval(mins => ${ageMinutes}), now() - make_interval(mins => ${ageMinutes}),
                      ${revoked ? new Date() : null})`,
            )
          yield* session("old", 12 * 60 + 1, false)
          yield* session("old-revoked", 24 * 60, true)
          yield* session("young", 11 * 60, false)
          yield* session("young-revoked", 60, true)
          const failure = (email: string, ageMinutes: number) =>
            query(
              (sql) => sql`
              insert into operator_sign_in_failures (email, failed_at)
              values (${email}, now() - make_interval(mins => ${ageMinutes}))`,
            )
          yield* failure("guess@example.com", 16)
          yield* failure("guess@example.com", 14)
          yield* failure("other@example.com", 60 * 24)
          const pruned = yield* sweep()
          assert.strictEqual(pruned.operator_sessions, 2)
          assert.strictEqual(pruned.sign_in_failures, 2)
          const sessions = yield* query(
            (sql) => sql<Array<{ csrf_token: string }>>`
            select csrf_token from operator_sessions where operator_id = ${operator!.id} order by csrf_token`,
          )
          assert.deepStrictEqual(
            sessions.map((row) => row.csrf_token),
            ["young", "young-revoked"],
          )
          const failures = yield* query(
            (sql) => sql<Array<{ email: string }>>`select email from operator_sign_in_failures`,
          )
          assert.deepStrictEqual(
            failures.map((row) => row.email),
            ["guess@example.com"],
          )
        }),
    )

    it.effect("deletes portal sessions a day past their expiry, ended or not, and keeps the others", () =>
      Effect.gen(function* () {
        const holder = yield* owner("portal-retention")
        const session = (label: string, expiredHoursAgo: number, ended: boolean) =>
          query(
            (sql) => sql`
              insert into portal_sessions (owner_id, read_only, parent_origin, code_hash, created_at, expires_at,
                                           ended_at)
              values (${holder.id}, false, ${label}, ${Buffer.from(label)}, now() - interval '2 days',
                      now() - make_interval(hours => ${expiredHoursAgo}), ${ended ? new Date() : null})`,
          )
        yield* session("https://gone.example", 25, false)
        yield* session("https://ended.example", 30, true)
        yield* session("https://recent.example", 23, false)
        yield* session("https://live.example", -1, true)
        const pruned = yield* sweep()
        assert.strictEqual(pruned.portal_sessions, 2)
        const left = yield* query(
          (sql) => sql<Array<{ parent_origin: string }>>`
            select parent_origin from portal_sessions where owner_id = ${holder.id} order by parent_origin`,
        )
        assert.deepStrictEqual(
          left.map((row) => row.parent_origin),
          ["https://live.example", "https://recent.example"],
        )
      }),
    )

    it.effect("keeps the audit log and policy documents, however old", () =>
      Effect.gen(function* () {
        yield* query(
          (sql) => sql`
            insert into audit_log (actor, action, target, created_at)
            values ('cli:ops', 'secrets.show', 'owner:acme', now() - interval '400 days')`,
        )
        // A document record alone, without the policy it belongs to: only its age matters here.
        yield* Effect.flatMap(Effect.service(Db), (db) =>
          db.transaction(
            Effect.gen(function* () {
              yield* db.query((sql) => sql`set local session_replication_role = replica`)
              yield* db.query(
                (sql) => sql`
                  insert into policy_documents (policy_id, generation, object_name, status, requested_at, stored_at)
                  values (424242, 1, 'retention-test', 'stored', now() - interval '400 days',
                          now() - interval '400 days')`,
              )
            }),
          ),
        )
        const snapshot = query(
          (sql) => sql<Array<{ audit: number; documents: number }>>`
            select (select count(*)::int from audit_log where created_at < now() - interval '399 days') as audit,
                   (select count(*)::int from policy_documents where requested_at < now() - interval '399 days')
                     as documents`,
        )
        assert.deepStrictEqual([...(yield* snapshot)], [{ audit: 1, documents: 1 }])
        yield* sweep()
        assert.deepStrictEqual([...(yield* snapshot)], [{ audit: 1, documents: 1 }])
      }),
    )

    it.effect("logs a failed sweep as a warning and sweeps again at the next period", () =>
      Effect.gen(function* () {
        const logs = captureLogs("Warn")
        const scope = yield* Scope.make()
        yield* query((sql) => sql`alter table dead_letters rename to dead_letters_away`)
        yield* Layer.buildWithScope(Retention.sweepLayer.pipe(Layer.provide(logs.layer)), scope)
        yield* eventually(
          Effect.sync(() => logs.lines.filter((line) => line.includes("retention sweep failed")).length),
          (n) => n >= 2,
        )
        const failed = JSON.parse(logs.lines.find((line) => line.includes("retention sweep failed"))!)
        assert.strictEqual(failed.level, "WARN")
        yield* query(
          (sql) => sql`
            insert into dead_letters_away (actor, stream, stream_seq, subject, payload, reason, delivery_count,
                                           created_at)
            values ('retention-loop', 'EVENTS', 1, 'events.acme.policy.created', '\\x00', 'undecodable', 1,
                    now() - interval '8 days')`,
        )
        yield* query((sql) => sql`alter table dead_letters_away rename to dead_letters`)
        yield* eventually(
          query(
            (sql) => sql<Array<{ n: number }>>`
            select count(*)::int as n from dead_letters where actor = 'retention-loop'`,
          ),
          ([row]) => row!.n === 0,
        )
        yield* Scope.close(scope, Exit.void)
      }),
    )
  })
})

/** The service as deployed (partner API, console, workers) with a five-second sweep. */
const service = authService({
  env: authEnv({
    ROLES: "partner-api,console,workers",
    CONSOLE_PORT: "0",
    RETENTION_SWEEP_SECONDS: "5",
    WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
  }),
})

describe("deliveries past the retention, with RETENTION_SWEEP_SECONDS=5", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect("are gone from the database, the partner API and the console within 30 s", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        yield* createOwner("acme")
        const partner = yield* webhookPartner({ owners: ["acme"] })
        const created = yield* createEndpoint(partner, ownerEndpoints("acme"), {
          name: "Main",
          destination_url: receiver.url("/acme"),
          events: ["policy.created"],
        })
        const ids = yield* deliveries(created.id, 4, "delivered", 0)
        const [old1, old2, young1, young2] = ids as [string, string, string, string]
        const base = `${ownerEndpoints("acme")}/${created.id}/deliveries`
        const listed = (yield* api(partner, "GET", base)).body!.deliveries as ReadonlyArray<{ id: number }>
        assert.deepStrictEqual(
          listed.map((d) => String(d.id)),
          [young2, young1, old2, old1],
        )
        yield* query(
          (sql) => sql`
            update webhook_deliveries set created_at = created_at - interval '31 days'
            where id = any(${[old1, old2]}::bigint[])`,
        )
        yield* eventually(
          Effect.all([remaining([old1, old2]), attemptsOf([old1, old2])]),
          ([rows, attempts]) => rows.length === 0 && attempts === 0,
        ).pipe(Effect.timeout("30 seconds"))

        const after = yield* api(partner, "GET", base)
        assert.deepStrictEqual(
          (after.body!.deliveries as ReadonlyArray<{ id: number }>).map((d) => String(d.id)),
          [young2, young1],
        )
        assert.strictEqual((after.body!.meta as { total_count: number }).total_count, 2)
        for (const [method, path] of [
          ["GET", `${base}/${old1}`],
          ["POST", `${base}/${old1}/retry`],
        ] as const) {
          const answer = yield* api(partner, method, path)
          assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
          assert.deepStrictEqual(answer.body, { status_code: 404, error: "Delivery not found." })
        }

        const operator = yield* operatorSession("ops@example.com", "operator")
        const list = yield* call("GET", `/api/deliveries?endpoint=${created.id}`, { cookie: operator.cookie })
        assert.strictEqual(list.status, 200, list.text)
        assert.deepStrictEqual(
          (list.body.deliveries as ReadonlyArray<{ id: number }>).map((d) => String(d.id)),
          [young2, young1],
        )
        const detail = yield* call("GET", `/api/deliveries/${old2}`, { cookie: operator.cookie })
        const retry = yield* call("POST", `/api/deliveries/${old2}/retry`, {
          cookie: operator.cookie,
          csrf: operator.csrf,
        })
        for (const answer of [detail, retry]) {
          assert.strictEqual(answer.status, 404, answer.text)
          assert.deepStrictEqual(answer.body, { status_code: 404, error: "Delivery not found." })
        }
        assert.strictEqual(receiver.received().length, 0)
      }),
    )
  })
})

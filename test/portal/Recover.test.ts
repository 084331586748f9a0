import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import { RecoveryAnswer } from "../../backend/portal/Api.ts"
import { READ_ONLY } from "../../backend/portal/Routes.ts"
import { RECOVERY_RUNNING, SINCE_FUTURE } from "../../backend/portal/Recoveries.ts"
import { BulkRetries, DEFAULT_RATE } from "../../backend/webhooks/bulk/BulkRetries.ts"
import { authEnv, authService } from "../support/Auth.ts"
import {
  openSession,
  ownerSessions,
  ownerWithEndpoint,
  call,
  portalDelivery,
  type Answer,
} from "../support/Portal.ts"
import { eventually } from "../support/Streams.ts"
import { api, ownerEndpoints, query } from "../support/Webhooks.ts"

const env = authEnv({ ROLES: "partner-api,portal", PORTAL_PORT: "0", PORTAL_BASE_URL: "https://portal.test" })
const service = authService({ env })

const recoveryOf = (answer: Answer) => Schema.decodeUnknownSync(RecoveryAnswer)(answer.body).recovery

/** Runs the workers' side of bulk retries (recoveries among them) until the returned scope is closed. */
const startRunner = Effect.gen(function* () {
  const scope = yield* Scope.make()
  yield* Layer.buildWithScope(BulkRetries.runnerLayer, scope)
  return scope
})

/** The deliveries of `endpointId` sent again (a series after the first), by id. */
const retriedIds = (endpointId: number) =>
  query(
    (sql) => sql<Array<{ id: string }>>`
      select id from webhook_deliveries where endpoint_id = ${endpointId} and series > 1 order by id`,
  ).pipe(Effect.map((rows) => rows.map((row) => Number(row.id))))

const hourAgo = () => new Date(Date.now() - 3600_000).toISOString()

describe("portal recoveries", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a preview counts what its start sends again, at the bulk retry's rate, to completion", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("recover-a")
        const failed = [
          yield* portalDelivery(a.endpoint.id, { ageMs: 60_000 }),
          yield* portalDelivery(a.endpoint.id, { ageMs: 30_000 }),
          yield* portalDelivery(a.endpoint.id, { ageMs: 1000 }),
        ]
        yield* portalDelivery(a.endpoint.id, { ageMs: 2 * 3600_000 })
        yield* portalDelivery(a.endpoint.id, { status: "delivered", ageMs: 1000 })
        const caller = yield* openSession(a.partner, ownerSessions("recover-a"))

        const made = yield* call(caller, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: {
            since: hourAgo(),
          },
        })
        assert.strictEqual(made.status, 201, made.text)
        const preview = recoveryOf(made)
        assert.deepInclude(preview, { endpoint_id: a.endpoint.id, status: "previewed", total: 3, done: 0 })
        // A failure after the preview is not in it: the start sends what the preview counted.
        yield* portalDelivery(a.endpoint.id, { ageMs: 0 })

        const started = yield* call(caller, "POST", `/portal/api/recoveries/${preview.id}/start`)
        assert.strictEqual(started.status, 200, started.text)
        assert.deepInclude(recoveryOf(started), { id: preview.id, status: "running", total: 3 })
        const [job] = yield* query(
          (sql) => sql<Array<{ created_by: string; rate_per_second: number }>>`
            select created_by, rate_per_second from bulk_retries where id = ${preview.id}`,
        )
        assert.match(job!.created_by, /^portal:/)
        assert.strictEqual(job!.rate_per_second, DEFAULT_RATE)

        const runner = yield* startRunner
        const done = yield* eventually(
          Effect.map(call(caller, "GET", `/portal/api/recoveries/${preview.id}`), recoveryOf),
          (recovery) => recovery.status === "completed",
        )
        yield* Scope.close(runner, Exit.void)
        assert.deepInclude(done, { total: 3, done: 3 })
        assert.isNotNull(done.finished_at)
        assert.deepStrictEqual(yield* retriedIds(a.endpoint.id), failed)

        const audit = yield* query(
          (sql) => sql<
            Array<{ actor: string; channel: string; action: string; details: { owner?: string } }>
          >`
            select actor, channel, action, details from audit_log where target = ${`bulk_retry:${preview.id}`}
            order by id`,
        )
        assert.deepStrictEqual(
          audit.map((row) => [row.channel, row.action, row.details.owner]),
          [
            ["portal", "recoveries.preview", "recover-a"],
            ["portal", "recoveries.start", "recover-a"],
          ],
        )
        assert.isTrue(audit.every((row) => row.actor === job!.created_by))
      }),
    )

    it.effect("one recovery of an endpoint runs at a time; only a preview starts", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("recover-one")
        yield* portalDelivery(a.endpoint.id, { ageMs: 1000 })
        const caller = yield* openSession(a.partner, ownerSessions("recover-one"))
        const preview = () =>
          Effect.map(
            call(caller, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
              body: {
                since: hourAgo(),
              },
            }),
            recoveryOf,
          )
        const first = yield* preview()
        const second = yield* preview()
        const started = yield* call(caller, "POST", `/portal/api/recoveries/${first.id}/start`)
        assert.strictEqual(started.status, 200, started.text)
        const refused = yield* call(caller, "POST", `/portal/api/recoveries/${second.id}/start`)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.deepStrictEqual(refused.body, { status_code: 409, error: RECOVERY_RUNNING })
        const again = yield* call(caller, "POST", `/portal/api/recoveries/${first.id}/start`)
        assert.strictEqual(again.status, 422, again.text)
        assert.deepStrictEqual(Object.keys(again.body.errors as object), ["status"])
      }),
    )

    it.effect("another holder's endpoint or recovery is not found; a bad or future since is a 422", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("recover-mine")
        const b = yield* ownerWithEndpoint("recover-theirs")
        const mine = yield* openSession(a.partner, ownerSessions("recover-mine"))
        const theirs = yield* openSession(b.partner, ownerSessions("recover-theirs"))

        const other = yield* call(mine, "POST", `/portal/api/endpoints/${b.endpoint.id}/recoveries`, {
          body: {
            since: hourAgo(),
          },
        })
        assert.strictEqual(other.status, 404, other.text)
        assert.deepStrictEqual(other.body, { status_code: 404, error: "Endpoint not found." })
        const unknown = yield* call(mine, "POST", "/portal/api/endpoints/999999999/recoveries", {
          body: {
            since: hourAgo(),
          },
        })
        assert.strictEqual(unknown.status, 404, unknown.text)

        const made = yield* call(mine, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: {
            since: hourAgo(),
          },
        })
        const id = recoveryOf(made).id
        for (const [method, path] of [
          ["GET", `/portal/api/recoveries/${id}`],
          ["POST", `/portal/api/recoveries/${id}/start`],
        ] as const) {
          const answer = yield* call(theirs, method, path)
          assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
          assert.deepStrictEqual(answer.body, { status_code: 404, error: "Recovery not found." })
        }
        const notARecovery = yield* query(
          (sql) => sql<Array<{ id: string }>>`
            insert into bulk_retries (filter, rate_per_second, created_by, status)
            values ('{}', 1, 'ops@console.test', 'previewed') returning id::text`,
        )
        const console_ = yield* call(mine, "GET", `/portal/api/recoveries/${notARecovery[0]!.id}`)
        assert.strictEqual(console_.status, 404, console_.text)

        const future = yield* call(mine, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: {
            since: new Date(Date.now() + 3600_000).toISOString(),
          },
        })
        assert.strictEqual(future.status, 422, future.text)
        assert.deepStrictEqual(future.body.errors, { since: [SINCE_FUTURE] })
        const bad = yield* call(mine, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: {
            since: "yesterday",
          },
        })
        assert.strictEqual(bad.status, 422, bad.text)
        assert.deepStrictEqual(Object.keys(bad.body.errors as object), ["since"])
      }),
    )

    it.effect("a recovery of an endpoint deleted since its preview is not started", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("recover-gone")
        const caller = yield* openSession(a.partner, ownerSessions("recover-gone"))
        const made = yield* call(caller, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: {
            since: hourAgo(),
          },
        })
        const id = recoveryOf(made).id
        const removed = yield* api(a.partner, "DELETE", `${ownerEndpoints("recover-gone")}/${a.endpoint.id}`)
        assert.strictEqual(removed.status, 204, removed.text)
        const started = yield* call(caller, "POST", `/portal/api/recoveries/${id}/start`)
        assert.strictEqual(started.status, 404, started.text)
        const still = yield* call(caller, "GET", `/portal/api/recoveries/${id}`)
        assert.strictEqual(recoveryOf(still).status, "previewed")
      }),
    )

    it.effect("a read-only session changes nothing (403); without the CSRF token neither", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("recover-ro")
        const readOnly = yield* openSession(a.partner, ownerSessions("recover-ro"), { read_only: true })
        const refused = yield* call(readOnly, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: {
            since: hourAgo(),
          },
        })
        assert.strictEqual(refused.status, 403, refused.text)
        assert.deepStrictEqual(refused.body, { status_code: 403, error: READ_ONLY })
        const writer = yield* openSession(a.partner, ownerSessions("recover-ro"))
        const noCsrf = yield* call(writer, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: { since: hourAgo() },
          csrf: "wrong",
        })
        assert.strictEqual(noCsrf.status, 403, noCsrf.text)
        const [count] = yield* query(
          (sql) => sql<Array<{ n: number }>>`
            select count(*)::int as n from bulk_retries where recovery_endpoint_id = ${a.endpoint.id}`,
        )
        assert.strictEqual(count!.n, 0)
      }),
    )
  })
})

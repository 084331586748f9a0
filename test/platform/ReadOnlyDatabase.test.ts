import { assert, describe, layer } from "@effect/vitest"
import { Cause, Effect, Exit, type Layer, Redacted } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { databaseUrl } from "../../backend/platform/DatabaseUrl.ts"
import { connect, Db } from "../../backend/platform/Db.ts"
import { unavailableIn } from "../../backend/platform/Unavailable.ts"
import { authEnv, authService, gatewayPort, httpRequest } from "../support/Auth.ts"
import { envelope, ingestLog, ingestSetUp, postEvent, prospectUpdate } from "../support/Ingest.ts"
import { captureLogs } from "../support/Logs.ts"
import {
  awaitProspect,
  completeProspect,
  ENROLLMENT_HOST,
  postProspect,
  prospectSetUp,
} from "../support/Prospects.ts"
import type { RosterPartner } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"
import { adminConnection } from "../support/TemplateDatabase.ts"

/** The gateways and the workers, each test on a service of its own: a test's cuts leave the next one alone. */
const newService = (references?: Layer.Layer<never>) =>
  authService({
    env: authEnv({ ROLES: "partner-api,ingest-api,workers", ENROLLMENT_HOST }),
    ...(references ? { references } : {}),
  })

type Admin = ReturnType<typeof adminConnection>

/** Runs `statements` as an administrator of the service's server, with the name of the service's database. */
const admin = (statements: (sql: Admin, database: string) => Promise<unknown>) =>
  Effect.gen(function* () {
    const url = Redacted.value((yield* AppConfig).databaseUrl)
    yield* Effect.promise(async () => {
      const sql = adminConnection(url)
      await statements(sql, databaseUrl(url).database).finally(() => sql.end())
    })
  })

const terminateBackends = (sql: Admin, database: string) =>
  sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`

/**
 * A failover as the service sees it, without a standby: the database refuses writes (SQLSTATE 25006, what a
 * standby answers) and its sessions are cut, so every new connection is read-only.
 */
const turnReadOnly = admin(async (sql, database) => {
  await sql`alter database ${sql(database)} set default_transaction_read_only = on`
  await terminateBackends(sql, database)
})

/** The primary back: new sessions may write; `terminate` also cuts the sessions opened read-only. */
const turnWritable = (terminate: boolean) =>
  admin(async (sql, database) => {
    await sql`alter database ${sql(database)} reset default_transaction_read_only`
    if (terminate) await terminateBackends(sql, database)
  })

/** Requests during the outage: enough that several reach Postgres past the outage gate's quick refusals. */
const OUTAGE_REQUESTS = 20

/** Prospect POSTs spread over the outage, with each answer's status and Retry-After. */
const postDuringOutage = (partner: RosterPartner, slug: string, source: string, prefix: string) =>
  Effect.gen(function* () {
    const port = yield* gatewayPort("partner-api")
    const answers: Array<{ status: number; retryAfter: string | null; text: string }> = []
    for (let i = 0; i < OUTAGE_REQUESTS; i++) {
      const answer = yield* httpRequest(port, `/partners/${slug}/prospects`, {
        method: "POST",
        headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
        body: JSON.stringify({ prospect: completeProspect(source, `${prefix}-${i}`) }),
      })
      answers.push({
        status: answer.status,
        retryAfter: answer.headers.get("retry-after"),
        text: answer.text,
      })
      yield* Effect.sleep("100 millis")
    }
    return answers
  })

/** The SQLSTATE a database call died with, whether or not it was taken for an outage. */
const failedCode = (exit: Exit.Exit<unknown>) => {
  if (Exit.isSuccess(exit)) return undefined
  const unavailable = unavailableIn(exit.cause)
  if (unavailable) return unavailable.reason.split(":")[0]
  return (Cause.squash(exit.cause) as { code?: string }).code
}

const assertUnavailable = (
  answers: ReadonlyArray<{ status: number; retryAfter: string | null; text: string }>,
) => {
  for (const answer of answers) {
    assert.strictEqual(answer.status, 503, answer.text)
    assert.match(answer.retryAfter ?? "", /^\d+$/)
  }
}

/** Posts a new prospect until one is stored (the test's timeout bounds it). */
const storedOnceWritable = (partner: RosterPartner, slug: string, source: string, id: string) =>
  eventually(postProspect(partner, slug, completeProspect(source, id)), (answer) => answer.status === 200)

const logs = captureLogs("Warn")

describe("a database that turns read-only, as a failover shows it", () => {
  layer(newService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "answers prospect POSTs 503 with Retry-After, never 500, while writes are refused; once writable, stores and decides again without restart",
      () =>
        Effect.gen(function* () {
          const source = "vero-readonly"
          const { partner, slug } = yield* prospectSetUp("org-readonly", source)
          const before = yield* postProspect(partner, slug, completeProspect(source, "before"))
          assert.strictEqual(before.status, 200, before.text)

          yield* turnReadOnly
          assertUnavailable(yield* postDuringOutage(partner, slug, source, "during"))

          yield* turnWritable(true)
          const after = yield* storedOnceWritable(partner, slug, source, "after")
          assert.strictEqual(after.body.status_code, 201, after.text)
          yield* awaitProspect(partner, slug, source, "after")
        }),
    )
  })
})

describe("a write refused as read-only", () => {
  layer(newService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("takes a write refused as read-only (SQLSTATE 25006) for Postgres unavailable, not a bug", () =>
      Effect.gen(function* () {
        const db = yield* Db
        yield* turnReadOnly
        const write = Effect.exit(
          db.query(
            (sql) => sql`insert into owners (slug, name) values ('read-only-owner', 'Read-only owner')`,
          ),
        )
        // The first calls after the cut may find the connection closed; the one that reaches the server is refused.
        const refused = yield* eventually(write, (exit) => failedCode(exit) === "25006")
        assert.strictEqual(Exit.isFailure(refused) && unavailableIn(refused.cause)?.dependency, "postgres")
        yield* turnWritable(true)
      }),
    )

    it.effect(
      "closes a pooled connection found read-only, so the pool's next query runs on a new connection that may write",
      () =>
        Effect.flatMap(Effect.service(AppConfig), (config) =>
          Effect.promise(async () => {
            const sql = connect(Redacted.value(config.databaseUrl), { max: 1 })
            try {
              const [first] = await sql`select pg_backend_pid() as pid`
              // This session only: what a connection still open to a server that turned standby goes on answering.
              await sql`set default_transaction_read_only = on`
              const refused =
                await sql`insert into owners (slug, name) values ('pool-owner-1', 'Pool owner')`.catch(
                  (error: { code?: string }) => error.code,
                )
              assert.strictEqual(refused, "25006")
              const [next] = await sql`insert into owners (slug, name) values ('pool-owner-2', 'Pool owner')
              returning pg_backend_pid() as pid`
              assert.notStrictEqual(next!.pid, first!.pid)
            } finally {
              await sql.end({ timeout: 5 })
            }
          }),
        ),
    )
  })
})

describe("an actor on a database that turns read-only", () => {
  layer(newService(logs.layer).layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "pauses the ingest actor while writes are refused and applies the event once writable, never as a handler that died",
      () =>
        Effect.gen(function* () {
          const source = "act-readonly"
          const setUp = yield* ingestSetUp("org-act-readonly", source)
          yield* turnReadOnly
          // The gateway only reads (a read-only database serves it) and publishes: the actor meets the refusal.
          // Its first requests after the cut may find their connection gone and answer 503.
          const accepted = yield* eventually(
            postEvent(setUp.client, envelope(source, prospectUpdate("p-readonly", "2026-01-10T12:00:00Z"))),
            (answer) => answer.status === 202,
          )
          const eventId = (JSON.parse(accepted.text) as { event_id: string }).event_id
          const actorOutcome = (line: string) =>
            line.includes('"actor":"ingest"') &&
            (line.includes("actor paused") || line.includes("actor handler died"))
          yield* eventually(
            Effect.sync(() => logs.lines),
            (lines) => lines.some(actorOutcome),
          )
          assert.isFalse(
            logs.lines.some((line) => line.includes("actor handler died")),
            logs.lines.filter(actorOutcome).join("\n"),
          )
          yield* turnWritable(false)
          // Read as the service reads: a query pipelined behind a refused write shares its dropped connection.
          const log = yield* eventually(
            Effect.exit(ingestLog(source)),
            (exit) => Exit.isSuccess(exit) && exit.value.some((row) => row.event_id === eventId),
          )
          assert.deepStrictEqual(Exit.isSuccess(log) && log.value.map((row) => [row.event_id, row.outcome]), [
            [eventId, "applied"],
          ])
        }),
    )
  })
})

describe("a connection found read-only", () => {
  layer(newService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "drops a connection found read-only: once the database is writable, the next prospects are stored with no connection cut from outside",
      () =>
        Effect.gen(function* () {
          const source = "vero-readonly-drop"
          const { partner, slug } = yield* prospectSetUp("org-readonly-drop", source)

          yield* turnReadOnly
          assertUnavailable(yield* postDuringOutage(partner, slug, source, "during"))

          yield* turnWritable(false)
          const after = yield* storedOnceWritable(partner, slug, source, "after")
          assert.strictEqual(after.body.status_code, 201, after.text)
          yield* awaitProspect(partner, slug, source, "after")
        }),
    )
  })
})

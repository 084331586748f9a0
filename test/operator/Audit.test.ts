import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Db } from "../../backend/platform/Db.ts"
import { AuditChannel, recordAudit } from "../../backend/audit/Audit.ts"
import { call, consoleService, operatorSession } from "../support/Operator.ts"
import { query } from "../support/WebhookEngine.ts"

/** The statement's failure message, or undefined when Postgres accepted it. */
const refusal = (statement: string) =>
  Effect.flatMap(Effect.service(Db), (db) =>
    db.query((sql) =>
      sql.unsafe(statement).then(
        () => undefined,
        (error: Error) => error.message,
      ),
    ),
  )

describe("the audit log", () => {
  layer(consoleService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("is append-only: UPDATE, DELETE and TRUNCATE are refused, whoever asks", () =>
      Effect.gen(function* () {
        const db = yield* Db
        yield* recordAudit(db, {
          actor: "cli:root",
          action: "test.write",
          target: "thing:1",
          after: { a: 1 },
        })
        assert.match((yield* refusal("update audit_log set actor = 'someone else'"))!, /append-only: UPDATE/)
        assert.match((yield* refusal("delete from audit_log"))!, /append-only: DELETE/)
        assert.match((yield* refusal("truncate audit_log"))!, /append-only: TRUNCATE/)
        const rows = yield* query(
          (sql) => sql`select actor, channel, after from audit_log where target = 'thing:1'`,
        )
        assert.deepStrictEqual([...rows], [{ actor: "cli:root", channel: "cli", after: { a: 1 } }])
      }),
    )

    it.effect("lists entries newest first with filters and a cursor", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const viewer = yield* operatorSession("auditor@audit.test", "viewer")
        for (let i = 1; i <= 5; i++) {
          yield* recordAudit(db, {
            actor: i % 2 === 0 ? "even@audit.test" : "odd@audit.test",
            action: i <= 3 ? "audit.early" : "audit.late",
            target: `item:${i}`,
            before: { n: i - 1 },
            after: { n: i },
          }).pipe(Effect.provideService(AuditChannel, "console"))
        }
        const first = yield* call("GET", "/api/audit?actor=odd%40audit.test&limit=2", viewer)
        assert.strictEqual(first.status, 200, first.text)
        assert.deepStrictEqual(
          first.body.entries.map((e: { target: string }) => e.target),
          ["item:5", "item:3"],
        )
        const entry = first.body.entries[0]
        assert.deepInclude(entry, {
          actor: "odd@audit.test",
          channel: "console",
          action: "audit.late",
          target: "item:5",
          before: { n: 4 },
          after: { n: 5 },
        })
        assert.isNumber(entry.id)
        assert.match(entry.at, /^\d{4}-\d{2}-\d{2}T.*Z$/)
        const rest = yield* call(
          "GET",
          `/api/audit?actor=odd%40audit.test&limit=2&cursor=${first.body.next_cursor}`,
          viewer,
        )
        assert.deepStrictEqual(
          rest.body.entries.map((e: { target: string }) => e.target),
          ["item:1"],
        )
        assert.isNull(rest.body.next_cursor)
        const early = yield* call("GET", "/api/audit?action=audit.early", viewer)
        assert.deepStrictEqual(
          early.body.entries.map((e: { target: string }) => e.target),
          ["item:3", "item:2", "item:1"],
        )
        const one = yield* call("GET", "/api/audit?target=item%3A2", viewer)
        assert.strictEqual(one.body.entries.length, 1)
        const future = yield* call(
          "GET",
          `/api/audit?since=${encodeURIComponent("2999-01-01T00:00:00Z")}`,
          viewer,
        )
        assert.deepStrictEqual(future.body, { entries: [], next_cursor: null })
        const bad = yield* call("GET", "/api/audit?since=yesterday&limit=500", viewer)
        assert.strictEqual(bad.status, 422)
        assert.deepStrictEqual(bad.body.filter, {
          since: "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z",
          limit: "must be an integer from 1 to 100",
        })
      }),
    )
  })
})

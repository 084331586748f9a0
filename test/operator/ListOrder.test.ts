import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Db } from "../../backend/platform/Db.ts"
import { AuditChannel, recordAudit } from "../../backend/audit/Audit.ts"
import { type Answer, call, consoleService, operatorSession, type SignedIn } from "../support/Operator.ts"
import { endpoint, owner, query, subscriber } from "../support/WebhookEngine.ts"

/** More rows than a single digit holds, so an order of ids as text ("9" after "15") shows. */
const ROWS = 15

/** Every page of a cursor-paginated list, `limit` at a time: the ids in the order the pages gave them. */
const allIds = (path: string, key: string, session: SignedIn, limit = 4) =>
  Effect.gen(function* () {
    const ids: Array<number> = []
    let cursor: string | null = null
    do {
      const separator = path.includes("?") ? "&" : "?"
      const answer: Answer = yield* call(
        "GET",
        `${path}${separator}limit=${limit}${cursor === null ? "" : `&cursor=${cursor}`}`,
        session,
      )
      assert.strictEqual(answer.status, 200, answer.text)
      const rows = answer.body[key] as ReadonlyArray<{ id: number }>
      assert.isAtMost(rows.length, limit)
      ids.push(...rows.map((row) => row.id))
      cursor = answer.body.next_cursor
    } while (cursor !== null)
    return ids
  })

const newestFirst = (ids: ReadonlyArray<number>) => [...ids].sort((a, b) => b - a)

describe("the console's cursor-paginated lists", () => {
  layer(consoleService().layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("the audit log pages through fifteen entries newest first, by number", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const viewer = yield* operatorSession("order-audit@order.test", "viewer")
        for (let i = 1; i <= ROWS; i++) {
          yield* recordAudit(db, { actor: "cli:order", action: "order.test", target: `item:${i}` }).pipe(
            Effect.provideService(AuditChannel, "cli"),
          )
        }
        const ids = yield* allIds("/api/audit?action=order.test", "entries", viewer)
        assert.strictEqual(ids.length, ROWS)
        assert.deepStrictEqual(ids, newestFirst(ids))
        const first = yield* call("GET", "/api/audit?action=order.test&limit=3", viewer)
        assert.deepStrictEqual(
          first.body.entries.map((e: { target: string }) => e.target),
          ["item:15", "item:14", "item:13"],
        )
      }),
    )

    it.effect("deliveries, endpoints and bulk retries page through fifteen rows newest first", () =>
      Effect.gen(function* () {
        const operator = yield* operatorSession("order-operator@order.test", "operator")
        const acme = yield* owner("acme-order")
        const sub = yield* subscriber({ ownerId: acme.id })
        const endpoints: Array<number> = []
        for (let i = 1; i <= ROWS; i++) {
          endpoints.push(yield* endpoint(sub.id, `https://acme.example/hooks/${i}`, ["policy.created"]))
        }
        const listedEndpoints = yield* allIds("/api/endpoints?owner=acme-order", "endpoints", operator)
        assert.deepStrictEqual(listedEndpoints, newestFirst(endpoints))

        // One a minute, the newest last written; the list is by creation time, then id.
        yield* query(
          (sql) => sql`
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, created_at)
            select ${endpoints[0]!}, 'order-' || i, 'policy.created', 'acme-order', convert_to('{}', 'UTF8'),
                   'failed', timestamptz '2026-03-01T00:00:00Z' + i * interval '1 minute'
            from generate_series(1, ${ROWS}) i`,
        )
        const deliveries = yield* allIds("/api/deliveries?owner=acme-order", "deliveries", operator)
        assert.strictEqual(deliveries.length, ROWS)
        assert.deepStrictEqual(deliveries, newestFirst(deliveries))

        const jobs: Array<number> = []
        for (let i = 1; i <= ROWS; i++) {
          const created = yield* call("POST", "/api/bulk-retries", {
            ...operator,
            body: { filter: { owner: `nobody-${i}` }, rate_per_second: 1 },
          })
          assert.strictEqual(created.status, 201, created.text)
          jobs.push(created.body.bulk_retry.id)
        }
        const listedJobs = yield* allIds("/api/bulk-retries", "bulk_retries", operator)
        assert.deepStrictEqual(listedJobs, newestFirst(jobs))
      }),
    )
  })
})

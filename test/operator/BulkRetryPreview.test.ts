import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, consoleService, operatorSession } from "../support/Operator.ts"
import { endpoint, owner, query, subscriber } from "../support/WebhookEngine.ts"
import { insertDelivery } from "../support/Webhooks.ts"

/** The delivery ids a job snapshotted, in its order. */
const itemsOf = (jobId: number) =>
  query(
    (sql) => sql<Array<{ delivery_id: string }>>`
      select delivery_id from bulk_retry_items where bulk_retry_id = ${jobId} order by position`,
  ).pipe(Effect.map((rows) => rows.map((row) => Number(row.delivery_id))))

// The console role alone: no worker takes a job, so what a job holds is looked at before anything retries it.
describe("a bulk retry's preview", () => {
  layer(consoleService({ ROLES: "console" }).layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "counts what the job then retries: the same deliveries, even when more match by the start",
      () =>
        Effect.gen(function* () {
          const operator = yield* operatorSession("preview@bulk.test", "operator")
          const acme = yield* owner("preview-acme")
          const sub = yield* subscriber({ ownerId: acme.id })
          const id = yield* endpoint(sub.id, "https://preview.example/hook", ["policy.created"])
          const failed: Array<number> = []
          for (let i = 0; i < 12; i++) failed.push(yield* insertDelivery(id, { status: "failed" }))
          const filter = { endpoint: String(id), status: "failed" }

          const preview = yield* call("POST", "/api/bulk-retries/previews", { ...operator, body: { filter } })
          assert.strictEqual(preview.status, 201, preview.text)
          assert.deepInclude(preview.body.bulk_retry, { status: "previewed", total: 12, done: 0 })
          const jobId = preview.body.bulk_retry.id as number
          // A preview is no job yet: the list leaves it out, and no delivery changed.
          const listed = yield* call("GET", "/api/bulk-retries", operator)
          assert.notInclude(
            listed.body.bulk_retries.map((j: { id: number }) => j.id),
            jobId,
          )

          // One more fails before the operator confirms: the job still takes the twelve the preview counted.
          const late = yield* insertDelivery(id, { status: "failed" })
          const count = yield* call("GET", `/api/deliveries/count?endpoint=${id}&status=failed`, operator)
          assert.deepStrictEqual(count.body, { count: 13 })
          const started = yield* call("POST", `/api/bulk-retries/${jobId}/start`, {
            ...operator,
            body: { rate_per_second: 5 },
          })
          assert.strictEqual(started.status, 200, started.text)
          assert.deepInclude(started.body.bulk_retry, { id: jobId, status: "running", total: 12, done: 0 })
          assert.sameMembers(yield* itemsOf(jobId), failed)
          assert.notInclude(yield* itemsOf(jobId), late)
          const [audit] = yield* query(
            (sql) => sql<
              Array<{ actor: string; action: string; after: { total: number; rate_per_second: number } }>
            >`
            select actor, action, after from audit_log where target = ${`bulk_retry:${jobId}`}`,
          )
          assert.deepInclude(audit, { actor: operator.email, action: "bulk_retries.create" })
          assert.deepInclude(audit!.after, { total: 12, rate_per_second: 5 })

          // Started once only.
          const again = yield* call("POST", `/api/bulk-retries/${jobId}/start`, {
            ...operator,
            body: { rate_per_second: 5 },
          })
          assert.strictEqual(again.status, 422, again.text)
          assert.deepStrictEqual(again.body.bulk_retry, { status: "is running: only a preview starts" })
        }),
    )

    it.effect("a preview that matches nothing completes when started; a bad rate is refused", () =>
      Effect.gen(function* () {
        const operator = yield* operatorSession("preview-empty@bulk.test", "operator")
        const preview = yield* call("POST", "/api/bulk-retries/previews", {
          ...operator,
          body: { filter: { owner: "nobody-at-all" } },
        })
        assert.deepInclude(preview.body.bulk_retry, { status: "previewed", total: 0 })
        const jobId = preview.body.bulk_retry.id as number
        const badRate = yield* call("POST", `/api/bulk-retries/${jobId}/start`, {
          ...operator,
          body: { rate_per_second: 1000 },
        })
        assert.strictEqual(badRate.status, 422)
        assert.deepStrictEqual(badRate.body.bulk_retry, {
          rate_per_second: "must be an integer from 1 to 100",
        })
        const started = yield* call("POST", `/api/bulk-retries/${jobId}/start`, { ...operator, body: {} })
        assert.deepInclude(started.body.bulk_retry, { status: "completed", total: 0, done: 0 })
        const missing = yield* call("POST", "/api/bulk-retries/999999/start", { ...operator, body: {} })
        assert.strictEqual(missing.status, 404)
      }),
    )

    it.effect("numbers jobs as they start: previews never started use no number", () =>
      Effect.gen(function* () {
        const operator = yield* operatorSession("preview-numbers@bulk.test", "operator")
        const preview = () =>
          Effect.map(
            call("POST", "/api/bulk-retries/previews", {
              ...operator,
              body: { filter: { owner: "nobody" } },
            }),
            (answer) => answer.body.bulk_retry as { id: number; number: number | null },
          )
        const start = (id: number) =>
          Effect.map(
            call("POST", `/api/bulk-retries/${id}/start`, { ...operator, body: {} }),
            (answer) => answer.body.bulk_retry as { number: number | null },
          )
        const before = yield* query(
          (sql) => sql<Array<{ n: string | null }>>`select max(number)::text as n from bulk_retries`,
        )
        const last = Number(before[0]!.n ?? 0)
        const looked = [yield* preview(), yield* preview(), yield* preview()]
        assert.deepStrictEqual(
          looked.map((job) => job.number),
          [null, null, null],
          "a preview has no number",
        )
        assert.strictEqual((yield* start(looked[2]!.id)).number, last + 1)
        assert.strictEqual((yield* start((yield* preview()).id)).number, last + 2)
      }),
    )
  })
})

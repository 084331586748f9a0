import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { type BulkRetry, BulkRetries } from "../../backend/webhooks/bulk/BulkRetries.ts"
import { Deliveries } from "../../backend/operator/DeliveryQueries.ts"
import { eventually } from "../support/Streams.ts"
import { Endpoints } from "../../backend/webhooks/endpoints/Endpoints.ts"
import {
  endpoint,
  enginePlatform,
  engineService,
  owner,
  query,
  subscriber,
} from "../support/WebhookEngine.ts"
import { startReceiver } from "../support/Receiver.ts"

/** The whole workers role, its bulk retry runner included. */
const engine = engineService()
/** Only the services: these tests start and stop runners themselves, and nothing is delivered. */
const platform = enginePlatform()
const servicesLayer = BulkRetries.layer.pipe(
  Layer.provideMerge(Deliveries.layer),
  Layer.provideMerge(Endpoints.layer),
  Layer.provideMerge(platform.layer),
)

/** An endpoint of a real receiver (answering 200) with `failed` failed deliveries and `delivered` delivered ones. */
const failedDeliveries = (slug: string, failed: number, delivered = 0) =>
  Effect.gen(function* () {
    const receiver = yield* startReceiver
    const acme = yield* owner(slug)
    const sub = yield* subscriber({ ownerId: acme.id })
    const endpointId = yield* endpoint(sub.id, receiver.url(`/${slug}`), ["policy.created"])
    yield* query(
      (sql) => sql`
        insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status,
                                        last_attempt_failure_reason)
        select ${endpointId}, ${slug} || '-' || i, 'policy.created', ${slug}, convert_to('{"n":' || i || '}', 'UTF8'),
               case when i <= ${failed} then 'failed' else 'delivered' end,
               case when i <= ${failed} then 'Destination answered 500' end
        from generate_series(1, ${failed + delivered}) i`,
    )
    return { receiver, endpointId }
  })

/** Each delivery's series: 1 untouched, 2 retried once. */
const seriesOf = (endpointId: number) =>
  query(
    (sql) => sql<Array<{ series: number; status: string; n: number }>>`
      select series, status, count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId}
      group by series, status order by series, status`,
  ).pipe(Effect.map((rows) => rows.map((r) => [r.series, r.status, r.n])))

/** Runs the workers' side of bulk retries until the returned scope is closed. */
const startRunner = Effect.gen(function* () {
  const scope = yield* Scope.make()
  yield* Layer.buildWithScope(BulkRetries.runnerLayer, scope)
  return scope
})
const stopRunner = (scope: Scope.Closeable) => Scope.close(scope, Exit.void)

/** Polls the job until `check` holds, keeping every `done` seen. */
const watch = (id: number, check: (job: BulkRetry) => boolean, seen: Array<number> = []) =>
  Effect.gen(function* () {
    const bulk = yield* BulkRetries
    return yield* eventually(
      bulk.get(id).pipe(Effect.tap((job) => Effect.sync(() => seen.push(job.done)))),
      check,
    )
  })

describe("bulk retries in the workers role", () => {
  layer(engine.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect(
      "retries what the filter matched when created, at most rate_per_second a step, to completion",
      () =>
        Effect.gen(function* () {
          const bulk = yield* BulkRetries
          const { receiver, endpointId } = yield* failedDeliveries("acme-bulk", 12, 3)
          const job = yield* bulk.create({ endpoint: endpointId, status: "failed" }, 5, "ops@example.com")
          assert.deepStrictEqual(
            [job.status, job.total, job.done, job.created_by, job.finished_at],
            ["running", 12, 0, "ops@example.com", null],
          )
          assert.deepStrictEqual(job.filter, { endpoint: endpointId, status: "failed" })
          // Matching only after the job was created: not in its snapshot.
          yield* query(
            (sql) => sql`
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status)
            values (${endpointId}, 'late', 'policy.created', 'acme-bulk', convert_to('{}', 'UTF8'), 'failed')`,
          )
          const seen: Array<number> = []
          const done = yield* watch(job.id, (j) => j.status === "completed", seen)
          assert.strictEqual(done.done, 12)
          assert.isNotNull(done.finished_at)
          // Progress only ever grows, by at most the rate per step.
          for (let i = 1; i < seen.length; i++) {
            assert.isTrue(seen[i]! >= seen[i - 1]! && seen[i]! - seen[i - 1]! <= 5, seen.join(","))
          }
          yield* eventually(seriesOf(endpointId), (rows) =>
            rows.some(([series, status, n]) => series === 2 && status === "delivered" && n === 12),
          )
          assert.deepStrictEqual(yield* seriesOf(endpointId), [
            [1, "delivered", 3],
            [1, "failed", 1],
            [2, "delivered", 12],
          ])
          assert.strictEqual(receiver.received("/acme-bulk").length, 12)
          assert.deepStrictEqual((yield* bulk.list()).bulk_retries.map((j) => j.id).slice(0, 1), [job.id])
        }).pipe(Effect.scoped),
    )
  })
})

describe("bulk retry jobs", () => {
  layer(servicesLayer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect("stops at once when canceled; a finished job is answered unchanged", () =>
      Effect.gen(function* () {
        const bulk = yield* BulkRetries
        const { endpointId } = yield* failedDeliveries("acme-cancel", 40)
        const job = yield* bulk.create({ endpoint: String(endpointId) }, 2, "ops@example.com")
        const runner = yield* startRunner
        yield* watch(job.id, (j) => j.done >= 2)
        const canceled = yield* bulk.cancel(job.id)
        assert.strictEqual(canceled.status, "canceled")
        assert.isNotNull(canceled.finished_at)
        assert.isBelow(canceled.done, 40)
        yield* Effect.sleep("2500 millis")
        const later = yield* bulk.get(job.id)
        assert.deepStrictEqual([later.status, later.done], ["canceled", canceled.done])
        const retried = (yield* seriesOf(endpointId)).filter(([series]) => series === 2)
        assert.strictEqual(
          retried.reduce((n, [, , count]) => n + (count as number), 0),
          canceled.done,
        )
        assert.deepStrictEqual(yield* bulk.cancel(String(job.id)), later)
        yield* stopRunner(runner)
      }).pipe(Effect.scoped),
    )

    it.effect(
      "resumes where it was after its runner stops and starts again, and two runners share nothing",
      () =>
        Effect.gen(function* () {
          const bulk = yield* BulkRetries
          const { endpointId } = yield* failedDeliveries("acme-resume", 30)
          const job = yield* bulk.create({ owner: "acme-resume" }, 5, "ops@example.com")
          const first = yield* startRunner
          const before = yield* watch(job.id, (j) => j.done >= 5)
          yield* stopRunner(first)
          const stopped = yield* bulk.get(job.id)
          assert.strictEqual(stopped.status, "running")
          assert.isBelow(stopped.done, 30)
          assert.isAtLeast(stopped.done, before.done)
          const [lease] = yield* query(
            (sql) => sql`select lease_owner from bulk_retries where id = ${job.id}`,
          )
          assert.isNull(lease!.lease_owner)
          yield* Effect.sleep("1500 millis")
          assert.strictEqual((yield* bulk.get(job.id)).done, stopped.done)

          // Started again, twice: one of them takes the job, and each delivery is retried once.
          const again = [yield* startRunner, yield* startRunner]
          const done = yield* watch(job.id, (j) => j.status === "completed")
          assert.strictEqual(done.done, 30)
          for (const runner of again) yield* stopRunner(runner)
          // Retried as the partner API's retry does: a new series, due now (nothing delivers in these tests).
          assert.deepStrictEqual(yield* seriesOf(endpointId), [[2, "pending", 30]])
        }).pipe(Effect.scoped),
    )

    it.effect("snapshots a large match in batches; nothing matched completes at once", () =>
      Effect.gen(function* () {
        const bulk = yield* BulkRetries
        const { endpointId } = yield* failedDeliveries("acme-large", 12_345)
        const job = yield* bulk.create({ endpoint: endpointId, status: "failed" }, 1, "ops@example.com")
        assert.strictEqual(job.total, 12_345)
        const [items] = yield* query(
          (sql) => sql`
            select count(distinct delivery_id)::int as ids, min(position) as first, max(position) as last
            from bulk_retry_items where bulk_retry_id = ${job.id}`,
        )
        assert.deepStrictEqual([items!.ids, items!.first, items!.last], [12_345, 1, 12_345])
        yield* bulk.cancel(job.id)

        const none = yield* bulk.create({ owner: "nobody-at-all" }, undefined, "ops@example.com")
        assert.deepStrictEqual([none.status, none.total, none.done], ["completed", 0, 0])
      }).pipe(Effect.scoped),
    )

    it.effect(
      "refuses a request that names no filter, an unknown key, a bad value or rate; 404s unknown ids",
      () =>
        Effect.gen(function* () {
          const bulk = yield* BulkRetries
          const refused = (filter: unknown, rate?: unknown) =>
            Effect.flip(bulk.create(filter, rate, "ops@example.com")).pipe(
              Effect.map((error) => [error._tag, error.fields]),
            )
          assert.deepStrictEqual(yield* refused({}), [
            "BulkRetryInvalid",
            { filter: "must name at least one filter" },
          ])
          assert.deepStrictEqual(yield* refused({ status: "" }), [
            "BulkRetryInvalid",
            { filter: "must name at least one filter" },
          ])
          assert.deepStrictEqual(yield* refused([], 0), [
            "BulkRetryInvalid",
            { filter: "must be an object of filters", rate_per_second: "must be an integer from 1 to 100" },
          ])
          assert.deepStrictEqual(yield* refused({ endpont: "1" }, 101), [
            "BulkRetryInvalid",
            { filter: "has unknown keys: endpont", rate_per_second: "must be an integer from 1 to 100" },
          ])
          assert.deepStrictEqual(yield* refused({ status: "failed", since: "soon" }, "5"), [
            "BulkRetryInvalid",
            { rate_per_second: "must be an integer from 1 to 100" },
          ])
          assert.deepStrictEqual(yield* refused({ status: "failed", since: "soon" }), [
            "DeliveryFilterInvalid",
            { since: "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z" },
          ])
          for (const id of ["999999", "abc", "0"]) {
            assert.strictEqual((yield* Effect.flip(bulk.get(id)))._tag, "BulkRetryNotFound")
            assert.strictEqual((yield* Effect.flip(bulk.cancel(id)))._tag, "BulkRetryNotFound")
          }
          const [count] = yield* query((sql) => sql`select count(*)::int as n from bulk_retries`)
          const before = count!.n
          yield* refused({ endpont: "1" })
          const [after] = yield* query((sql) => sql`select count(*)::int as n from bulk_retries`)
          assert.strictEqual(after!.n, before)
        }),
    )
  })
})

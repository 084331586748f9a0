import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, consoleService, operatorSession } from "../support/Operator.ts"
import { endpoint, owner, subscriber } from "../support/WebhookEngine.ts"
import { insertDelivery } from "../support/Webhooks.ts"

describe("the console role alone in a process (ROLES=console)", () => {
  layer(consoleService({ ROLES: "console" }).layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("signs in, lists, shows and retries deliveries, and leaves bulk retries to the workers", () =>
      Effect.gen(function* () {
        const operator = yield* operatorSession("alone@console.test", "operator")
        const acme = yield* owner("alone-acme")
        const sub = yield* subscriber({ ownerId: acme.id })
        const id = yield* endpoint(sub.id, "https://alone.example/hook", ["policy.created"])
        const failed = yield* insertDelivery(id, {
          status: "failed",
          attempt_number: 25,
          last_attempt_failure_reason: "Destination answered 500",
        })

        const list = yield* call("GET", `/api/deliveries?endpoint=${id}`, operator)
        assert.strictEqual(list.status, 200, list.text)
        assert.deepStrictEqual(
          list.body.deliveries.map((d: { id: number; status: string }) => [d.id, d.status]),
          [[failed, "failed"]],
        )
        const detail = yield* call("GET", `/api/deliveries/${failed}`, operator)
        assert.strictEqual(detail.status, 200, detail.text)
        assert.strictEqual(detail.body.delivery.id, failed)
        const health = yield* call("GET", `/api/endpoints/${id}`, operator)
        assert.strictEqual(health.status, 200, health.text)
        assert.strictEqual(health.body.health.waiting, 0)

        const retried = yield* call("POST", `/api/deliveries/${failed}/retry`, operator)
        assert.strictEqual(retried.status, 202, retried.text)
        assert.strictEqual(retried.body.delivery.id, failed)
        // A retry waiting for the first attempt of its new series reads `retrying` in the console.
        assert.strictEqual(retried.body.delivery.status, "retrying")
        const asRetrying = yield* call("GET", `/api/deliveries?endpoint=${id}&status=retrying`, operator)
        assert.deepStrictEqual(
          asRetrying.body.deliveries.map((d: { id: number }) => d.id),
          [failed],
        )
        const asPending = yield* call("GET", `/api/deliveries?endpoint=${id}&status=pending`, operator)
        assert.deepStrictEqual(asPending.body.deliveries, [])

        // No worker runs here: the job is recorded and waits, untouched, for a process with `workers`.
        const job = yield* call("POST", "/api/bulk-retries", {
          ...operator,
          body: { filter: { endpoint: String(id) } },
        })
        assert.strictEqual(job.status, 201, job.text)
        yield* Effect.sleep("1500 millis")
        const later = yield* call("GET", `/api/bulk-retries/${job.body.bulk_retry.id}`, operator)
        assert.deepInclude(later.body.bulk_retry, { status: "running", total: 1, done: 0 })
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { UNKNOWN_OUTCOME_REASON } from "../../backend/webhooks/delivery/DeliveryRepo.ts"
import { startReceiver } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import {
  attemptsOf,
  awaitDeliveries,
  endpoint,
  enginePlatform,
  examplePayload,
  owner,
  publishEvent,
  subscriber,
  workerProcess,
} from "../support/WebhookEngine.ts"

const platform = enginePlatform({ WEBHOOK_TIMEOUT_MS: "5000" })

describe("attempts made by a worker that was killed", () => {
  layer(platform.layer, { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect(
      "are recorded with an unknown outcome, so every request a receiver got shows as an attempt",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          // Slow answers: the requests below reach the receiver and wait there when their worker is killed.
          receiver.respond("/crash", () => ({ status: 200, delayMs: 1500 }))
          const acme = yield* owner("acme-crash")
          const sub = yield* subscriber({ ownerId: acme.id })
          const id = yield* endpoint(sub.id, receiver.url("/crash"), ["policy_application.submitted"])
          const first = yield* workerProcess(platform.env)
          const EVENTS = 40
          const payload = examplePayload("policy_application.submitted")
          yield* Effect.forEach(
            Array.from({ length: EVENTS }, (_, i) => i),
            () => publishEvent("policy_application.submitted", acme.slug, payload),
            { concurrency: 10 },
          )
          yield* eventually(
            Effect.sync(() => receiver.received("/crash").length),
            (n) => n >= 10,
          )
          yield* first.signal("SIGKILL")
          yield* first.exited
          const reachedBeforeKill = receiver.received("/crash").length

          yield* workerProcess(platform.env)
          const rows = yield* awaitDeliveries(
            id,
            (rows) => rows.length === EVENTS && rows.every((r) => r.status === "delivered"),
          )
          const requests = new Map<string, number>()
          for (const request of receiver.received("/crash")) {
            const delivery = request.headers["x-webhook-delivery"] ?? ""
            requests.set(delivery, (requests.get(delivery) ?? 0) + 1)
          }
          let unknown = 0
          for (const row of rows) {
            const attempts = yield* attemptsOf(row.id)
            const received = requests.get(row.id) ?? 0
            assert.isAtLeast(attempts.length, received, `delivery ${row.id}: requests without an attempt`)
            assert.strictEqual(row.attempt_number, attempts.length, `delivery ${row.id}`)
            for (const attempt of attempts.slice(0, -1)) {
              assert.deepStrictEqual(
                [attempt.status_code, attempt.duration_ms, attempt.failure_reason],
                [null, null, UNKNOWN_OUTCOME_REASON],
              )
              unknown++
            }
            assert.strictEqual(attempts.at(-1)!.status_code, 200)
          }
          // The killed worker left the requests that had reached the receiver without an outcome.
          assert.isAtLeast(reachedBeforeKill, 10)
          assert.isAtLeast(unknown, 1)
          assert.isAtLeast(
            [...requests.values()].filter((n) => n > 1).length,
            1,
            "no delivery reached the receiver twice",
          )
        }).pipe(Effect.scoped),
      180_000,
    )
  })
})

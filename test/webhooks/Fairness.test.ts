import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitDeliveries,
  engineService,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
} from "../support/WebhookEngine.ts"

const CAP = 4
const service = engineService({
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(CAP),
  WEBHOOK_TIMEOUT_MS: "3000",
  WEBHOOK_BACKOFF_UNIT_MS: "50",
})

describe("fairness across partners", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "keeps an endpoint whose receiver never answers to its cap of open requests, while another owner's deliveries all arrive",
      () =>
        Effect.gen(function* () {
          const hanging = yield* receiverEndpoint("owner-a", "/hangs", ["delinquency.created"])
          hanging.receiver.respond("/hangs", () => ({ status: 200, delayMs: 600_000 }))
          const healthy = yield* receiverEndpoint("owner-b", "/answers", ["delinquency.created"])
          const A = 40
          const B = 20
          yield* Effect.forEach(
            Array.from({ length: A }),
            () => publishEvent("delinquency.created", "owner-a", examplePayload("delinquency.created")),
            { concurrency: 8 },
          )
          yield* awaitDeliveries(hanging.endpointId, (rows) => rows.length === A)
          yield* Effect.forEach(
            Array.from({ length: B }),
            () => publishEvent("delinquency.created", "owner-b", examplePayload("delinquency.created")),
            { concurrency: 8 },
          )
          yield* awaitDeliveries(
            healthy.endpointId,
            (rows) => rows.length === B && rows.every((r) => r.status === "delivered"),
          )
          assert.strictEqual(healthy.receiver.received("/answers").length, B)

          // Owner A's deliveries are all still waiting on their receiver or their turn: none lost, none failed.
          const aRows = yield* query(
            (sql) => sql`
              select d.status, d.attempt_number, count(a.*)::int as attempts
              from webhook_deliveries d left join webhook_attempts a on a.delivery_id = d.id
              where d.endpoint_id = ${hanging.endpointId} group by d.id`,
          )
          assert.strictEqual(aRows.length, A)
          assert.isTrue(aRows.every((r) => r.status === "pending" || r.status === "retrying"))
          // An attempt put off for the cap is not an attempt: a delivery never tried is still on its first.
          for (const row of aRows.filter((r) => r.attempts === 0)) assert.strictEqual(row.attempt_number, 1)
          assert.isAtMost(hanging.receiver.open("/hangs").most, CAP)
          assert.isAtLeast(hanging.receiver.received("/hangs").length, 1)
        }).pipe(Effect.scoped),
      120_000,
    )
  })
})

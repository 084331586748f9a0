import { assert, describe, layer } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import type { Payload } from "../../backend/events/Catalog.ts"
import { eventMessage } from "../../backend/events/Envelope.ts"
import { Db } from "../../backend/platform/Db.ts"
import { Outbox } from "../../backend/platform/Outbox.ts"
import { testPlatform } from "../support/TestPlatform.ts"

const policy: Payload<"policy.created"> = {
  id: "policy_41",
  policy_number: "SDI-41",
  status: "active",
  product_type: "security_deposit_insurance",
  coverage_amount_cents: 250000,
  coverage_start_date: "2025-02-01",
  coverage_end_date: "2026-01-31",
  admin_policy_url: "https://admin.example.test/policies/policy_41",
}

/** What the outbox holds for `key`: the bodies as they will be published. */
const stored = (key: string) =>
  Effect.flatMap(Effect.service(Db), (db) =>
    db.query((sql) => sql<Array<{ payload: Buffer }>>`select payload from outbox where key = ${key}`),
  ).pipe(Effect.map((rows) => rows.map((row) => JSON.parse(row.payload.toString("utf8")) as unknown)))

/** Enqueues `payload` as a `policy.created` of `key` in a transaction of its own. */
const enqueue = (key: string, payload: unknown) =>
  Effect.gen(function* () {
    const db = yield* Db
    const outbox = yield* Outbox
    return yield* db
      .transaction(outbox.enqueue([eventMessage("policy.created", "acme", key, payload as typeof policy)]))
      .pipe(Effect.exit)
  })

describe("partner events entering the outbox", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect("are encoded through their catalog schema: a valid body is stored as the webhook body", () =>
      Effect.gen(function* () {
        assert.isTrue(Exit.isSuccess(yield* enqueue("policy:valid", policy)))
        assert.deepStrictEqual(yield* stored("policy:valid"), [
          { event: "policy.created", property_owner_slug: "acme", data: { insurance_policy: policy } },
        ])
      }),
    )

    it.effect("refuse a payload with an extra field or a missing one, and store nothing", () =>
      Effect.gen(function* () {
        const { policy_number: _, ...missing } = policy
        const bodies = {
          "policy:extra": { ...policy, policy_url: "https://files.example.test/policy_41.zip" },
          "policy:missing": missing,
          "policy:wrong": { ...policy, coverage_amount_cents: "250000" },
        }
        for (const [key, payload] of Object.entries(bodies)) {
          const exit = yield* enqueue(key, payload)
          assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), key)
          assert.match(
            String(Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)),
            /policy\.created/,
          )
          assert.deepStrictEqual(yield* stored(key), [], key)
        }
      }),
    )
  })
})

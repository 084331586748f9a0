import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { enrollmentService } from "../support/Enrollment.ts"
import { issuePolicy, lifecycleOwner, revise } from "../support/Lifecycle.ts"
import { call, operatorSession } from "../support/Operator.ts"
import { startReceiver } from "../support/Receiver.ts"

const service = enrollmentService({ ROLES: "partner-api,enrollment,workers,console", CONSOLE_PORT: "0" })

describe("GET /api/policies/:id", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("shows a policy by the id partners see, with its revisions and delinquencies", () =>
      Effect.gen(function* () {
        const viewer = yield* operatorSession("viewer@policies.test", "viewer")
        const receiver = yield* startReceiver
        const owner = yield* lifecycleOwner(receiver, "console-org", "console", "/console")
        const policy = yield* issuePolicy(owner, "renter", {
          product: "security_deposit_insurance",
          cadence: "monthly",
        })
        yield* revise(policy.policyNumber, { coverageCents: "210000" }).pipe(Effect.orDie)
        const shown = yield* call("GET", `/api/policies/${policy.id}`, viewer)
        assert.strictEqual(shown.status, 200, shown.text)
        assert.deepInclude(shown.body.policy, {
          id: policy.id,
          policy_number: policy.policyNumber,
          coverage_amount_cents: 210_000,
          owner_slug: owner.slug,
          delinquencies: [],
        })
        const [revision] = shown.body.policy.revisions
        assert.strictEqual(shown.body.policy.revisions.length, 1)
        assert.deepInclude(revision, { action: "policies.revise", actor: "cli:ops@example.com" })
        const missing = yield* call("GET", "/api/policies/policy_999999", viewer)
        assert.strictEqual(missing.text, `{"status_code":404,"error":"Policy not found."}`)
      }),
    )
  })
})

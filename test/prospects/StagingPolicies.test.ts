import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { gatewayPort, httpRequest } from "../support/Auth.ts"
import { enrollmentService } from "../support/Enrollment.ts"
import { issuePolicy, lifecycleOwner } from "../support/Lifecycle.ts"
import { startReceiver } from "../support/Receiver.ts"

const reset = (token: string, path: string) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(yield* gatewayPort("partner-api"), path, {
      method: "DELETE",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    })
    assert.strictEqual(answer.status, 200, answer.text)
    return JSON.parse(answer.text) as { reset: { insurance_policy_ids: ReadonlyArray<number> } }
  })

/** `policy_17` -> 17: the published reset lists policies by their integer id. */
const numericId = (policy: { readonly id: string }) => Number(policy.id.replace(/^policy_/, ""))

describe("a staging reset of renters who hold policies (SERVICE_ENV=staging)", () => {
  layer(enrollmentService({ SERVICE_ENV: "staging" }).layer, { excludeTestServices: true, timeout: 240_000 })(
    (it) => {
      it.effect("lists the policies of each reset renter, which no longer belong to a prospect", () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "org-stg-policies", "stg-policies", "/p")
          const walk = { product: "security_deposit_insurance", cadence: "upfront" } as const
          const first = yield* issuePolicy(owner, "first", walk)
          const second = yield* issuePolicy(owner, "second", walk)
          const token = owner.partner.token

          const one = yield* reset(token, `/partners/${owner.slug}/test/residents/stg-policies/first`)
          assert.deepStrictEqual(one.reset.insurance_policy_ids, [numericId(first)])

          const rest = yield* reset(token, `/partners/${owner.slug}/test/sayrhino_users`)
          assert.deepStrictEqual(rest.reset.insurance_policy_ids, [numericId(second)])

          const again = yield* reset(token, `/partners/${owner.slug}/test/sayrhino_users`)
          assert.deepStrictEqual(again.reset.insurance_policy_ids, [])
        }),
      )
    },
  )
})

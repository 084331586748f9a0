import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { enrollmentService } from "../support/Enrollment.ts"
import { cli, issuePolicy, lifecycleOwner, OPERATOR } from "../support/Lifecycle.ts"
import type { Json } from "../support/PublishedApi.ts"
import { startReceiver } from "../support/Receiver.ts"
import { query } from "../support/Roster.ts"

const service = enrollmentService()

layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
  describe("npm run cli -- policies / delinquencies", () => {
    it.effect(
      "shows, revises and cancels a policy as the operator named by CLI_ACTOR, and refuses plainly",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "cli-org", "cli", "/cli")
          const policy = yield* issuePolicy(owner, "renter", {
            product: "security_deposit_insurance",
            cadence: "monthly",
          })

          const shown = yield* cli(service.env, "policies", "show", policy.policyNumber)
          assert.strictEqual(shown.code, 0, shown.stderr)
          assert.deepInclude(shown.json!.policy as Json, {
            id: policy.id,
            policy_number: policy.policyNumber,
            status: "active",
          })
          assert.deepInclude(shown.json!, {
            owner_slug: owner.slug,
            cadence: "monthly",
            installments_billed: 1,
          })

          const revised = yield* cli(
            service.env,
            "policies",
            "revise",
            policy.policyNumber,
            "--coverage-cents",
            "210000",
            "--end",
            "2027-03-31",
          )
          assert.strictEqual(revised.code, 0, revised.stderr)
          assert.deepInclude(revised.json!, { changed: true, canceled: false })
          assert.deepInclude(revised.json!.policy as Json, {
            coverage_amount_cents: 210_000,
            coverage_end_date: "2027-03-31",
          })

          const canceled = yield* cli(
            service.env,
            "policies",
            "cancel",
            policy.policyNumber,
            "--reason",
            "Moved before the lease began",
          )
          assert.strictEqual(canceled.code, 0, canceled.stderr)
          assert.strictEqual(canceled.json!.status, "canceled")

          const refused = [
            [["policies", "show", "SDI-1999-000000"], "no policy SDI-1999-000000\n"],
            [["policies", "revise", policy.policyNumber, "--end", "2027-04-30"], "is canceled"],
            [
              ["policies", "cancel", policy.policyNumber],
              "usage: policies cancel POLICY_NUMBER --reason TEXT",
            ],
            [["policies", "revise", policy.policyNumber, "--cover", "1"], "Unknown option '--cover'"],
            [["delinquencies", "resolve", "delinquency_12"], "no delinquency delinquency_12\n"],
          ] as const
          for (const [args, message] of refused) {
            const run = yield* cli(service.env, ...args)
            assert.strictEqual(run.code, 2, args.join(" "))
            assert.strictEqual(run.stdout, "", args.join(" "))
            assert.include(run.stderr, message, args.join(" "))
          }

          const audited = yield* query(
            (sql) => sql<Array<{ actor: string; action: string }>>`
            select actor, action from audit_log where target = ${`policy:${policy.policyNumber}`} order by id`,
          )
          assert.deepStrictEqual(audited, [
            { actor: OPERATOR, action: "policies.revise" },
            { actor: OPERATOR, action: "policies.cancel" },
          ])
        }).pipe(Effect.scoped),
    )
  })
})

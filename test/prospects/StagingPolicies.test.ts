import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { StagingConfig } from "../../backend/policies/Config.ts"
import { lifecyclePass } from "../../backend/policies/LifecycleJob.ts"
import { addMonths } from "../../backend/policies/Domain.ts"
import { STAGING_RESET_CHANNEL, STAGING_RESET_REASON } from "../../backend/policies/StagingResetJob.ts"
import { gatewayPort, httpRequest } from "../support/Auth.ts"
import { enrollmentService } from "../support/Enrollment.ts"
import {
  advanceClock,
  awaitDeliveries,
  dateFromToday,
  deliveries,
  issuePolicy,
  lifecycleOwner,
  showPolicy,
} from "../support/Lifecycle.ts"
import { getProspect } from "../support/Prospects.ts"
import { startReceiver } from "../support/Receiver.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

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
      it.effect("lists the policies of each reset renter and cancels them, as the scheduled reset does", () =>
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

          // Staging creates no real policies: a reset renter's policy is canceled, with no next charge.
          for (const policy of [first, second]) {
            const shown = yield* showPolicy(policy.policyNumber)
            assert.strictEqual(shown.policy.status, "canceled")
            assert.deepInclude(shown, { next_charge_on: null, cancellation_reason: STAGING_RESET_REASON })
          }
          const canceled = yield* awaitDeliveries(
            receiver,
            "/p",
            (r) => r.filter((d) => d.event === "policy.canceled").length === 2,
          )
          assert.sameMembers(
            canceled.filter((d) => d.event === "policy.canceled").map((d) => d.payload.id),
            [first.id, second.id],
          )
        }),
      )
    },
  )
})

/** The charges asked for a policy, oldest first. */
const chargesOf = (policyNumber: string) =>
  query(
    (sql) => sql<Array<{ kind: string; installment: number | null }>>`
      select c.kind, c.installment from charges c join policies p on p.id = c.policy_id
      where p.policy_number = ${policyNumber} order by c.id`,
  )

/** Sets a prospect's last change `days` back, as if nobody had touched it since. */
const lastChangedDaysAgo = (source: string, sourceProspectId: string, days: number) =>
  query(
    (sql) => sql`
      update prospects set updated_at = now() - make_interval(days => ${days})
      where source = ${source} and source_prospect_id = ${sourceProspectId}`,
  )

describe("the scheduled staging reset (SERVICE_ENV=staging, STAGING_RESET_DAYS=2)", () => {
  layer(enrollmentService({ SERVICE_ENV: "staging", STAGING_RESET_DAYS: "2" }).layer, {
    excludeTestServices: true,
    timeout: 240_000,
  })((it) => {
    it.effect(
      "resets the renters nobody changed for 2 days and cancels their policies, which are billed no more",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "org-stg-scheduled", "stg-scheduled", "/s")
          const lease = { lease_start_date: dateFromToday(-10), lease_end_date: dateFromToday(355) }
          const walk = { product: "security_deposit_insurance", cadence: "monthly" } as const
          // Issued first, so on the same due date the lifecycle job would charge it before the kept one.
          const idle = yield* issuePolicy(owner, "idle", walk, lease)
          const kept = yield* issuePolicy(owner, "kept", walk, lease)
          // The document actor writes the renter's latest coverage back, a change of the prospect: wait for it.
          yield* awaitDeliveries(
            receiver,
            "/s",
            (r) => r.filter((d) => d.event === "policy.documents_updated").length === 2,
          )
          yield* lastChangedDaysAgo(owner.source, "idle", 3)
          yield* lastChangedDaysAgo(owner.source, "kept", 1)
          yield* query((sql) => sql`select pg_notify(${STAGING_RESET_CHANNEL}, '')`)

          const canceled = yield* awaitDeliveries(receiver, "/s", (r) =>
            r.some((d) => d.event === "policy.canceled"),
          ).pipe(Effect.map((r) => r.filter((d) => d.event === "policy.canceled")))
          assert.deepStrictEqual(
            canceled.map((d) => d.payload.id),
            [idle.id],
          )
          assert.deepInclude(canceled[0]!.payload, { status: "canceled", source_prospect_id: "idle" })
          const gone = yield* getProspect(owner.partner, owner.slug, owner.source, "idle")
          assert.strictEqual(gone.status, 404, gone.text)
          assert.strictEqual(
            (yield* getProspect(owner.partner, owner.slug, owner.source, "kept")).status,
            200,
          )
          assert.deepInclude(yield* showPolicy(idle.policyNumber), {
            next_charge_on: null,
            cancellation_reason: STAGING_RESET_REASON,
          })
          assert.strictEqual((yield* showPolicy(idle.policyNumber)).policy.status, "canceled")

          // 40 days on: the second premiums are due. The kept renter's is charged; the reset one's never is.
          yield* advanceClock(owner, 40)
          yield* lifecyclePass
          const billed = yield* eventually(showPolicy(kept.policyNumber), (s) => s.installments_billed === 2)
          // Sold after its coverage began: premiums count from the sale.
          assert.strictEqual(billed.next_charge_on, addMonths(dateFromToday(0), 2))
          assert.deepStrictEqual(
            (yield* chargesOf(idle.policyNumber)).map((c) => c.kind),
            ["initial"],
          )
          assert.deepStrictEqual((yield* showPolicy(idle.policyNumber)).installments_billed, 1)
          // What the partner heard of the reset renter's policy: its sale, its documents and its cancellation.
          const heard = deliveries(receiver, "/s")
            .filter((d) => d.payload.policy_number === idle.policyNumber)
            .map((d) => d.event)
          assert.sameMembers(
            [...new Set(heard)],
            ["policy.created", "policy.documents_updated", "policy.canceled"],
          )
        }).pipe(Effect.scoped),
    )
  })
})

describe("STAGING_RESET_DAYS", () => {
  it.effect("is 30 days unless set, and otherwise a whole number of days from 1 to 3650", () =>
    Effect.gen(function* () {
      const days = (env: Record<string, string>) =>
        StagingConfig.use((config) => Effect.succeed(config.resetDays)).pipe(
          Effect.provide(StagingConfig.layer.pipe(Layer.provide(AppConfig.layerFrom(env)))),
          Effect.exit,
        )
      assert.deepStrictEqual(yield* days({}), Exit.succeed(30))
      assert.deepStrictEqual(yield* days({ STAGING_RESET_DAYS: "7" }), Exit.succeed(7))
      for (const value of ["0", "3651", "7d", "-1"]) {
        const exit = yield* days({ STAGING_RESET_DAYS: value })
        assert.isTrue(Exit.isFailure(exit), value)
        assert.include(
          String(Exit.isFailure(exit) ? exit.cause : ""),
          "a whole number of days from 1 to 3650",
        )
      }
    }),
  )
})

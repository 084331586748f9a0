import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { addMonths } from "../../backend/policies/Domain.ts"
import { Billing } from "../../backend/policies/Billing.ts"
import { TEST_CARDS, testProvider } from "../../backend/policies/Payments.ts"
import {
  advanceClock,
  assertCatalogShapes,
  awaitDeliveries,
  dateFromToday,
  deliveries,
  issuePolicy,
  lifecycleOwner,
  lifecycleService,
  OPERATOR,
  showPolicy,
} from "../support/Lifecycle.ts"
import { startReceiver } from "../support/Receiver.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

const service = lifecycleService()

describe("the test provider's cards on monthly premiums", () => {
  it.effect("the fails-next-charge card is declined on the next premium only", () =>
    Effect.gen(function* () {
      const saved = yield* testProvider.saveCard({
        number: TEST_CARDS["fails-next-charge"],
        expMonth: 12,
        expYear: 2039,
        cvc: "123",
        name: "Test Renter",
      })
      assert.isTrue(saved.saved)
      const reference = saved.saved ? saved.card.reference : ""
      const charged = (installment: number) =>
        testProvider
          .charge({
            card: reference,
            amountCents: 500,
            idempotencyKey: `key-${installment}`,
            description: "premium",
            occasion: "recurring",
            installment,
          })
          .pipe(Effect.map((outcome) => outcome.charged))
      assert.deepStrictEqual([yield* charged(2), yield* charged(3), yield* charged(4)], [false, true, true])
    }),
  )
})

layer(service.layer, { excludeTestServices: true, timeout: 240_000 })((it) => {
  describe("monthly billing and delinquencies", () => {
    it.effect(
      "a missed monthly premium opens a delinquency and a later payment resolves it; an operator may resolve one too",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "billing-org", "billing", "/b")
          const lease = { lease_start_date: dateFromToday(5), lease_end_date: dateFromToday(370) }
          const monthly = (card: "ok" | "fails-next-charge") =>
            ({ product: "security_deposit_insurance", cadence: "monthly", card }) as const
          const missed = yield* issuePolicy(owner, "missed", monthly("fails-next-charge"), lease)
          const paying = yield* issuePolicy(owner, "paying", monthly("ok"), lease)
          const forgiven = yield* issuePolicy(owner, "forgiven", monthly("fails-next-charge"), lease)
          // Sold months into its lease: its premiums count from the sale, not from the lease's start.
          const midLease = yield* issuePolicy(owner, "mid-lease", monthly("ok"), {
            lease_start_date: dateFromToday(-100),
            lease_end_date: dateFromToday(265),
          })
          assert.strictEqual(
            (yield* showPolicy(midLease.policyNumber)).next_charge_on,
            addMonths(dateFromToday(0), 1),
          )
          const premium = Number((yield* showPolicy(missed.policyNumber)).premium_cents)
          assert.strictEqual(
            (yield* showPolicy(missed.policyNumber)).next_charge_on,
            addMonths(lease.lease_start_date, 1),
          )

          // A month and a bit later on the owner's clock: the second premiums come due.
          yield* advanceClock(owner, 40)
          const created = yield* awaitDeliveries(
            receiver,
            "/b",
            (r) => r.filter((d) => d.event === "delinquency.created").length === 2,
          ).pipe(Effect.map((r) => r.filter((d) => d.event === "delinquency.created")))
          const byPolicy = new Map(created.map((d) => [d.payload.policy_number, d.payload]))
          assert.sameMembers([...byPolicy.keys()], [missed.policyNumber, forgiven.policyNumber])
          const missedDelinquency = byPolicy.get(missed.policyNumber)!
          assert.deepStrictEqual(missedDelinquency, {
            id: missedDelinquency.id,
            status: "active",
            amount_cents: premium,
            policy_number: missed.policyNumber,
            pms_property_code: "pms-prop-1",
            pms_unit_code: "pms-unit-1",
            pms_tenant_code: "prospect-789",
            source_prospect_id: "missed",
          })
          assert.match(missedDelinquency.id as string, /^delinquency_\d+$/)
          const shown = yield* showPolicy(paying.policyNumber)
          assert.strictEqual(shown.policy.status, "active")
          assert.strictEqual(shown.installments_billed, 2)
          assert.strictEqual(shown.next_charge_on, addMonths(lease.lease_start_date, 2))

          // The operator clears one (paid another way): resolved with nothing outstanding, audited.
          const forgivenId = byPolicy.get(forgiven.policyNumber)!.id as string
          const resolved = yield* Billing.use((billing) => billing.resolve(forgivenId, OPERATOR))
          assert.deepInclude(resolved, { id: forgivenId, status: "resolved", amount_cents: 0 })
          assert.strictEqual(resolved.resolved_amount_cents, premium)
          const again = yield* Effect.flip(Billing.use((billing) => billing.resolve(forgivenId, OPERATOR)))
          assert.include(again.message, "already resolved")

          // The next month: the missed premium is charged with the new one, which succeeds and resolves it.
          yield* advanceClock(owner, 31)
          const received = yield* awaitDeliveries(
            receiver,
            "/b",
            (r) => r.filter((d) => d.event === "delinquency.resolved").length === 2,
          )
          const resolutions = received.filter((d) => d.event === "delinquency.resolved")
          const byCharge = resolutions.find((d) => d.payload.policy_number === missed.policyNumber)!
          assert.deepStrictEqual(byCharge.payload, {
            ...missedDelinquency,
            status: "resolved",
            amount_cents: 0,
          })
          assert.strictEqual(received.filter((d) => d.event === "delinquency.created").length, 2)

          // Each policy's third premium is charged in a transaction of its own: wait for all four.
          const charges = yield* eventually(
            query(
              (sql) => sql<
                Array<{ policy_number: string; installment: number; amount_cents: string; status: string }>
              >`
                select p.policy_number, c.installment, c.amount_cents::text, c.status
                from charges c join policies p on p.id = c.policy_id
                where c.kind = 'monthly' order by p.policy_number, c.installment`,
            ),
            (rows) => rows.length === 8,
          )
          const of = (policyNumber: string) =>
            charges
              .filter((c) => c.policy_number === policyNumber)
              .map((c) => [c.installment, Number(c.amount_cents), c.status])
          assert.deepStrictEqual(of(missed.policyNumber), [
            [2, premium, "declined"],
            [3, 2 * premium, "succeeded"],
          ])
          assert.deepStrictEqual(of(forgiven.policyNumber), [
            [2, premium, "declined"],
            [3, premium, "succeeded"],
          ])
          assert.deepStrictEqual(of(midLease.policyNumber), [
            [2, premium, "succeeded"],
            [3, premium, "succeeded"],
          ])
          assert.deepStrictEqual(of(paying.policyNumber), [
            [2, premium, "succeeded"],
            [3, premium, "succeeded"],
          ])
          const history = (yield* showPolicy(missed.policyNumber)).delinquencies
          assert.deepInclude(history[0]!, {
            status: "resolved",
            resolution: "charge",
            resolved_amount_cents: premium,
            missed_installments: [2],
          })
          const audited = yield* query(
            (sql) => sql<Array<{ actor: string; action: string; target: string }>>`
              select actor, action, target from audit_log where action = 'delinquencies.resolve'`,
          )
          assert.deepStrictEqual(audited, [
            { actor: OPERATOR, action: "delinquencies.resolve", target: `delinquency:${forgivenId}` },
          ])
          assertCatalogShapes(deliveries(receiver, "/b"))
        }).pipe(Effect.scoped),
    )
  })
})

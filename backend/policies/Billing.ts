import { Clock, Context, Effect, Exit, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { Outbox } from "../platform/Outbox.ts"
import { addMonths, policyId } from "./Domain.ts"
import { delinquencyEvent, delinquencyPayload } from "./LifecycleEvents.ts"
import {
  DelinquencyNotFound,
  delinquencyId,
  delinquencyRowId,
  LifecycleCommandRejected,
} from "./LifecycleDomain.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"
import { PaymentProvider } from "./Payments.ts"
import { billingAnchor } from "./Pricing.ts"
import { PoliciesRepo } from "./Repo.ts"
import { TestClocks } from "./TestClocks.ts"

/** What charging one due premium came to. */
export interface InstallmentOutcome {
  readonly policyId: string
  readonly installment: number
  /** `failed`: the provider could not be asked (nothing was recorded; the pass leaves it for the next one). */
  readonly outcome: "charged" | "declined" | "failed"
}

/**
 * Monthly premiums and delinquencies. Premium n of a monthly policy is due n - 1 months after its coverage
 * starts, or after it was issued when the coverage had already begun (the first is paid at enrollment) and is charged off-session on the card the renter paid with, keyed
 * `policy_<id>-installment-<n>` so that asking again is the same charge. A declined premium opens a delinquency
 * (`delinquency.created`, `amount_cents` outstanding) or, when one is open, adds to it without a new event; the
 * next premium is then charged together with what is outstanding, and when that succeeds the delinquency is
 * resolved (`delinquency.resolved`, nothing outstanding). Operators may also resolve one (a payment received
 * another way).
 */
export class Billing extends Context.Service<Billing>()("partner-service/policies/Billing", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* LifecycleRepo
    const policiesRepo = yield* PoliciesRepo
    const provider = yield* PaymentProvider
    const outbox = yield* Outbox
    const clocks = yield* TestClocks

    /**
     * Charges the premium due longest (on its owner's date) of a policy no other process is charging, in one
     * transaction with its outcome; undefined when none is due. `skip`: policies this pass could not charge.
     */
    const chargeNextDue = Effect.fn("Billing.chargeNextDue")(function* (
      today: string,
      skip: ReadonlyArray<string>,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const due = yield* repo.lockNextDueCharge(today, clocks.enabled, skip)
          if (due === undefined) return undefined
          const policy = (yield* policiesRepo.findPolicy(due.id))!
          const installment = (yield* repo.lifecycleOf(policy.id, false)).installments_billed + 1
          const method = yield* policiesRepo.paymentMethod(policy.payment_method_id)
          const premium = Number(policy.premium_cents)
          const open = yield* repo.activeDelinquencyOf(policy.id)
          const amount = premium + (open === undefined ? 0 : Number(open.amount_cents))
          const idempotencyKey = `${policyId(policy.id)}-installment-${installment}`
          const asked =
            method.provider === provider.name
              ? yield* Effect.exit(
                  provider.charge({
                    card: method.reference,
                    amountCents: amount,
                    idempotencyKey,
                    description: `${policy.policy_number} premium ${installment} of ${policy.payments}`,
                    occasion: "recurring",
                    installment,
                  }),
                )
              : Exit.die(
                  new Error(`the card is held by the ${method.provider} provider, not ${provider.name}`),
                )
          if (Exit.isFailure(asked)) {
            yield* Effect.logError("monthly premium charge failed; retried next pass").pipe(
              Effect.annotateLogs({ policy: policyId(policy.id), installment, cause: String(asked.cause) }),
            )
            return { policyId: policy.id, installment, outcome: "failed" } satisfies InstallmentOutcome
          }
          const charged = asked.value
          yield* repo.recordInstallment({
            policy_id: policy.id,
            payment_method_id: policy.payment_method_id,
            installment,
            amount_cents: amount,
            status: charged.charged ? "succeeded" : "declined",
            provider_reference: charged.charged ? charged.reference : null,
            failure_reason: charged.charged ? null : charged.reason,
            idempotency_key: idempotencyKey,
          })
          yield* repo.advanceSchedule(
            policy.id,
            installment,
            installment < policy.payments
              ? addMonths(billingAnchor(policy.coverage_start_date, policy.issued_on), installment)
              : null,
          )
          const at = new Date(yield* Clock.currentTimeMillis)
          if (charged.charged && open !== undefined) {
            yield* repo.resolveDelinquency(open.id, "charge", at)
            yield* outbox.enqueue([
              delinquencyEvent("delinquency.resolved", (yield* repo.delinquency(open.id))!),
            ])
          } else if (!charged.charged && open !== undefined) {
            yield* repo.growDelinquency(open.id, premium, installment)
          } else if (!charged.charged) {
            const opened = yield* repo.openDelinquency(policy.id, premium, installment)
            yield* outbox.enqueue([
              delinquencyEvent("delinquency.created", (yield* repo.delinquency(opened))!),
            ])
          }
          yield* Effect.logInfo(
            charged.charged ? "monthly premium charged" : "monthly premium declined",
          ).pipe(
            Effect.annotateLogs({
              policy: policyId(policy.id),
              installment,
              amount_cents: amount,
              owner_today: due.today,
            }),
          )
          return {
            policyId: policy.id,
            installment,
            outcome: charged.charged ? "charged" : "declined",
          } satisfies InstallmentOutcome
        }),
      )
    })

    /** An operator clears a delinquency (`delinquency.resolved`); audited. */
    const resolve = Effect.fn("Billing.resolve")(function* (id: string, actor: string) {
      const rowId = delinquencyRowId(id.trim())
      if (rowId === undefined) {
        return yield* new LifecycleCommandRejected({
          message: `${id} is not a delinquency id (delinquency_<n>)`,
        })
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lockDelinquency(rowId)
          const current = yield* repo.delinquency(rowId)
          if (current === undefined) {
            return yield* new DelinquencyNotFound({ id: delinquencyId(rowId) })
          }
          if (current.status !== "active") {
            return yield* new LifecycleCommandRejected({
              message: `delinquency ${delinquencyId(rowId)} is already resolved`,
            })
          }
          yield* repo.resolveDelinquency(rowId, "operator", new Date(yield* Clock.currentTimeMillis))
          const resolved = (yield* repo.delinquency(rowId))!
          yield* repo.audit({
            actor,
            action: "delinquencies.resolve",
            target: `delinquency:${delinquencyId(rowId)}`,
            details: {
              policy_number: resolved.policy_number,
              resolved_amount_cents: Number(resolved.resolved_amount_cents),
            },
            before: { status: current.status },
            after: { status: resolved.status, resolved_amount_cents: Number(resolved.resolved_amount_cents) },
          })
          yield* outbox.enqueue([delinquencyEvent("delinquency.resolved", resolved)])
          return {
            ...delinquencyPayload(resolved),
            resolved_amount_cents: Number(resolved.resolved_amount_cents),
          }
        }),
      )
    })

    return { chargeNextDue, resolve }
  }),
}) {
  static readonly layer = Layer.effect(Billing, Billing.make)
}

import { Effect } from "effect"
import { Db } from "../platform/Db.ts"
import { rowIdOf } from "./Domain.ts"
import { delinquencyPayload } from "./LifecycleEvents.ts"
import { PolicyNotFound } from "./LifecycleDomain.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"
import { Policies } from "./Policies.ts"
import { PoliciesRepo, type PolicyRow } from "./Repo.ts"
import { TestClocks } from "./TestClocks.ts"

/** What operators read of a policy: the whole of it by number, and the number behind a `policy_<n>` id. */
export const makePolicyOverview = <P>(payload: (row: PolicyRow) => P) =>
  Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* LifecycleRepo
    const policiesRepo = yield* PoliciesRepo
    const policies = yield* Policies
    const clocks = yield* TestClocks

    /** Everything operators need to see of a policy: its payload, documents link, billing, delinquencies, move-outs. */
    const show = Effect.fn("Revisions.show")(function* (policyNumber: string) {
      const id = yield* repo.policyIdByNumber(policyNumber)
      if (id === undefined) return yield* new PolicyNotFound({ policyNumber })
      // One snapshot: the lifecycle job's charge commits the installment and the next due date together.
      const { policy, lifecycle, delinquencies, moveOuts, documentsUrl } = yield* db.snapshot(
        Effect.all({
          policy: Effect.map(policiesRepo.findPolicy(id), (found) => found!),
          lifecycle: repo.lifecycleOf(id, false),
          delinquencies: repo.delinquenciesOf(id),
          moveOuts: repo.moveOutsOf(id),
          documentsUrl: policies.documentsUrlOf(id),
        }),
      )
      return {
        policy: payload(policy),
        owner_slug: policy.owner_slug,
        policy_url: documentsUrl ?? null,
        owner_today: yield* clocks.todayOf(policy.owner_id),
        issued_on: policy.issued_on,
        insured_name: policy.insured_name,
        premises: policy.premises,
        unit_name: policy.unit_name,
        policy_holder_name: policy.policy_holder_name,
        cadence: policy.cadence,
        premium_cents: Number(policy.premium_cents),
        payments: policy.payments,
        installments_billed: lifecycle.installments_billed,
        next_charge_on: policy.next_charge_on,
        card_last4: policy.card_last4,
        ...(lifecycle.cancellation_reason === null
          ? {}
          : { cancellation_reason: lifecycle.cancellation_reason }),
        delinquencies: delinquencies.map((d) => ({
          ...delinquencyPayload(d),
          missed_installments: d.missed_installments,
          ...(d.resolution === null
            ? {}
            : {
                resolution: d.resolution,
                resolved_amount_cents: Number(d.resolved_amount_cents),
                resolved_at: d.resolved_at,
              }),
          created_at: d.created_at,
        })),
        move_outs: moveOuts.map((m) => ({
          id: Number(m.id),
          external_id: m.external_id,
          status: m.status,
          move_out_date: m.move_out_date,
          created_at: m.created_at,
        })),
      }
    })

    /** The number of the policy `policy_<n>` names (the id in `admin_policy_url`); PolicyNotFound for any other. */
    const numberOf = Effect.fn("Revisions.numberOf")(function* (id: string) {
      const rowId = rowIdOf("policy_", id)
      const policy =
        rowId === undefined || !/^[1-9]\d{0,17}$/.test(rowId)
          ? undefined
          : yield* policiesRepo.findPolicy(rowId)
      if (policy === undefined) return yield* new PolicyNotFound({ policyNumber: id })
      return policy.policy_number
    })

    return { show, numberOf }
  })

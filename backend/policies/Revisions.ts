import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { hasControlCharacter } from "../platform/Text.ts"
import { Outbox } from "../platform/Outbox.ts"
import { MAX_AMOUNT } from "../prospects/Domain.ts"
import { addMonths, policyId, statusOn } from "./Domain.ts"
import { insurancePolicy, policyEvent } from "./Events.ts"
import { isCalendarDate } from "../platform/Dates.ts"
import { IN_FORCE, LifecycleCommandRejected, PolicyNotFound } from "./LifecycleDomain.ts"
import { LifecycleRepo, type RevisionWrite, type UnitCandidate } from "./LifecycleRepo.ts"
import { Policies } from "./Policies.ts"
import { makePolicyOverview } from "./PolicyOverview.ts"
import { billingAnchor } from "./Pricing.ts"
import { PoliciesRepo, type PolicyRow } from "./Repo.ts"
import { TestClocks } from "./TestClocks.ts"

/** What an operator asks a revision to change; strings as typed on the command line. */
export interface RevisionInput {
  readonly coverageCents?: string | undefined
  readonly start?: string | undefined
  readonly end?: string | undefined
  /** The `external_system_id` of the unit the policy moves to ... */
  readonly unit?: string | undefined
  /** ... in this building (its `external_system_id`), when several buildings have such a unit. */
  readonly property?: string | undefined
}

export const MAX_REASON = 500

const rejected = (message: string) => new LifecycleCommandRejected({ message })

/**
 * The next premium's day once the start moved: `billed` months after the new anchor. One that would fall after
 * 9999-12-31 comes after any coverage end, so no further premium is due (and the date could not be stored).
 */
const movedCharge = (anchor: string, billed: number) => {
  const next = addMonths(anchor, billed)
  return isCalendarDate(next) ? next : null
}

/** The revision's own columns of a policy, to compare before and after. */
const revisedFields = (row: PolicyRow) => ({
  status: row.status,
  coverage_amount_cents: Number(row.coverage_amount_cents),
  coverage_start_date: row.coverage_start_date,
  coverage_end_date: row.coverage_end_date,
  unit_id: row.unit_id,
  unit_name: row.unit_name,
  premises: row.premises,
})

/**
 * Operators' changes to an issued policy (the CLI now, the console later), each audited in the same transaction:
 * a revision of its coverage amount, dates or unit (`policy.updated`, then new documents and
 * `policy.documents_updated`; `policy.canceled` as well when the coverage ends before it starts), and a
 * cancellation (`policy.canceled`). A revision does not re-price: the premium stays as sold. What operators read
 * of a policy is in `PolicyOverview.ts`.
 */
export class Revisions extends Context.Service<Revisions>()("partner-service/policies/Revisions", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* LifecycleRepo
    const policiesRepo = yield* PoliciesRepo
    const policies = yield* Policies
    const outbox = yield* Outbox
    const clocks = yield* TestClocks
    const config = yield* AppConfig

    const payload = (row: PolicyRow) => insurancePolicy(row, config.consoleBaseUrl)

    /** The policy of that number, under its row lock, with its lifecycle columns. */
    const lockedPolicy = (policyNumber: string) =>
      Effect.gen(function* () {
        const id = yield* repo.policyIdByNumber(policyNumber)
        if (id === undefined) return yield* new PolicyNotFound({ policyNumber })
        const lifecycle = yield* repo.lifecycleOf(id, true)
        return { policy: (yield* policiesRepo.findPolicy(id))!, lifecycle }
      })

    const parseChanges = (policy: PolicyRow, input: RevisionInput) =>
      Effect.gen(function* () {
        if (input.property !== undefined && input.unit === undefined) {
          return yield* rejected("--property names the building of --unit; give --unit too")
        }
        if (
          input.coverageCents === undefined &&
          input.start === undefined &&
          input.end === undefined &&
          input.unit === undefined
        ) {
          return yield* rejected("nothing to revise: give --coverage-cents, --start, --end or --unit")
        }
        let coverage = Number(policy.coverage_amount_cents)
        if (input.coverageCents !== undefined) {
          if (!/^\d{1,12}$/.test(input.coverageCents) || Number(input.coverageCents) < 1) {
            return yield* rejected("--coverage-cents must be a whole number of cents above 0")
          }
          coverage = Number(input.coverageCents)
          const owner = yield* repo.ownerOf(policy.owner_id)
          const ceiling =
            owner.max_coverage_amount_cents === null ? MAX_AMOUNT : Number(owner.max_coverage_amount_cents)
          if (coverage > ceiling) {
            return yield* rejected(
              `--coverage-cents ${coverage} is above the owner's coverage ceiling of ${ceiling} cents`,
            )
          }
        }
        for (const [option, value] of [
          ["--start", input.start],
          ["--end", input.end],
        ] as const) {
          if (value !== undefined && !isCalendarDate(value)) {
            return yield* rejected(`${option} must be a date (YYYY-MM-DD)`)
          }
        }
        let unit: UnitCandidate | undefined
        if (input.unit !== undefined) {
          const candidates = yield* repo.unitCandidates(policy.owner_id, input.unit, input.property)
          const where =
            input.property === undefined ? "any building of the owner" : `building ${input.property}`
          if (candidates.length === 0) return yield* rejected(`no unit ${input.unit} in ${where}`)
          if (candidates.length > 1) {
            const buildings = candidates.map((c) => c.property_external_id ?? `(service id ${c.property_id})`)
            return yield* rejected(
              `unit ${input.unit} is in several buildings (${buildings.join(", ")}): name one with --property`,
            )
          }
          unit = candidates[0]
        }
        return {
          coverage,
          start: input.start ?? policy.coverage_start_date,
          end: input.end ?? policy.coverage_end_date,
          unit,
        }
      })

    /**
     * Applies the revision. A revision that changes nothing emits nothing. The policy's status follows its new
     * dates on its owner's date (`upcoming` before the start, else `active`; the lifecycle job expires one whose
     * coverage has ended), or becomes `canceled` when the coverage now ends before it starts.
     */
    const revise = Effect.fn("Revisions.revise")(function* (
      policyNumber: string,
      input: RevisionInput,
      actor: string,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const { policy, lifecycle } = yield* lockedPolicy(policyNumber)
          if (!(IN_FORCE as ReadonlyArray<string>).includes(policy.status)) {
            return yield* rejected(
              `policy ${policyNumber} is ${policy.status}: only a policy in force is revised`,
            )
          }
          const changes = yield* parseChanges(policy, input)
          const cancels = changes.end < changes.start
          const today = yield* clocks.todayOf(policy.owner_id)
          const unit = changes.unit
          const moved = unit !== undefined && unit.unit_id !== policy.unit_id
          const sameBuilding = unit !== undefined && unit.property_id === policy.property_id
          const startMoved = changes.start !== policy.coverage_start_date
          const write: RevisionWrite = {
            status: cancels ? "canceled" : statusOn(today, changes.start),
            coverage_amount_cents: String(changes.coverage),
            coverage_start_date: changes.start,
            coverage_end_date: changes.end,
            unit_id: moved ? unit.unit_id : policy.unit_id,
            property_id: moved ? unit.property_id : policy.property_id,
            pms_type: moved ? (unit.pms_type ?? (sameBuilding ? policy.pms_type : null)) : policy.pms_type,
            pms_property_id: moved
              ? (unit.pms_property_id ?? (sameBuilding ? policy.pms_property_id : null))
              : policy.pms_property_id,
            pms_unit_id: moved ? unit.pms_unit_id : policy.pms_unit_id,
            premises: moved ? unit.premises : policy.premises,
            unit_name: moved ? unit.unit_name : policy.unit_name,
            policy_holder_name: moved ? unit.policy_holder_name : policy.policy_holder_name,
            next_charge_on: cancels
              ? null
              : startMoved && policy.next_charge_on !== null
                ? movedCharge(billingAnchor(changes.start, policy.issued_on), lifecycle.installments_billed)
                : policy.next_charge_on,
            canceled_at: cancels ? new Date(yield* Clock.currentTimeMillis) : null,
          }
          const before = revisedFields(policy)
          const unchanged =
            write.status === policy.status &&
            write.coverage_amount_cents === String(Number(policy.coverage_amount_cents)) &&
            write.coverage_start_date === policy.coverage_start_date &&
            write.coverage_end_date === policy.coverage_end_date &&
            !moved
          if (unchanged) return { changed: false, canceled: false, policy: payload(policy) }

          yield* repo.applyRevision(policy.id, write)
          const revised = (yield* policiesRepo.findPolicy(policy.id))!
          const after = revisedFields(revised)
          yield* repo.audit({
            actor,
            action: "policies.revise",
            target: `policy:${policy.policy_number}`,
            details: { policy_id: policyId(policy.id), before, after },
            before,
            after,
          })
          const slug = revised.owner_slug
          yield* outbox.enqueue([
            policyEvent("policy.updated", slug, revised, config.consoleBaseUrl),
            ...(cancels ? [policyEvent("policy.canceled", slug, revised, config.consoleBaseUrl)] : []),
          ])
          const generation = yield* policies.requestDocuments(revised)
          yield* repo.wakeLifecycle
          yield* Effect.logInfo("policy revised").pipe(
            Effect.annotateLogs({
              policy: policyId(policy.id),
              policy_number: policy.policy_number,
              canceled: cancels,
              documents_generation: generation,
            }),
          )
          return {
            changed: true,
            canceled: cancels,
            policy: payload(revised),
            documents_generation: generation,
          }
        }),
      )
    })

    /** Cancels a policy in force (`policy.canceled`); no more premiums are charged. The reason stays with us. */
    const cancel = Effect.fn("Revisions.cancel")(function* (
      policyNumber: string,
      reason: string,
      actor: string,
    ) {
      const why = reason.trim()
      if (why === "" || why.length > MAX_REASON || hasControlCharacter(why)) {
        return yield* rejected(`--reason must be a sentence of 1 to ${MAX_REASON} characters`)
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          const { policy } = yield* lockedPolicy(policyNumber)
          if (!(IN_FORCE as ReadonlyArray<string>).includes(policy.status)) {
            return yield* rejected(`policy ${policyNumber} is already ${policy.status}`)
          }
          yield* repo.cancel(policy.id, why, new Date(yield* Clock.currentTimeMillis))
          const canceled = (yield* policiesRepo.findPolicy(policy.id))!
          yield* repo.audit({
            actor,
            action: "policies.cancel",
            target: `policy:${policy.policy_number}`,
            details: { policy_id: policyId(policy.id), reason: why, before: { status: policy.status } },
            before: { status: policy.status },
            after: { status: "canceled", cancellation_reason: why },
          })
          yield* outbox.enqueue([
            policyEvent("policy.canceled", canceled.owner_slug, canceled, config.consoleBaseUrl),
          ])
          yield* Effect.logInfo("policy canceled").pipe(
            Effect.annotateLogs({ policy: policyId(policy.id), policy_number: policy.policy_number }),
          )
          return payload(canceled)
        }),
      )
    })
    const { show, numberOf } = yield* makePolicyOverview(payload)

    return { revise, cancel, show, numberOf }
  }),
}) {
  static readonly layer = Layer.effect(Revisions, Revisions.make)
}

import { Effect } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Outbox } from "../platform/Outbox.ts"
import type { EnrollmentFacts } from "../prospects/Domain.ts"
import { Enrollments } from "../prospects/Enrollments.ts"
import {
  addMonths,
  type ApplicationRow,
  applicationId,
  type Cadence,
  policyId,
  policyProductOf,
  type PolicyRow,
  type ProductType,
  RENTER_GUARANTEE_VERSION,
  statusOn,
} from "./Domain.ts"
import { applicationEvent, policyEvent } from "./Events.ts"
import { type Card, PaymentProvider } from "./Payments.ts"
import { billingAnchor, price } from "./Pricing.ts"
import { PoliciesRepo } from "./Repo.ts"
import { coverageOf, type RenterAnswers, ruleFacts, underwrite } from "./Underwriting.ts"

/** Policy numbers name the product: `SDI-2026-000041`, `RG-...`, `DEP-...` (a cash deposit the service holds). */
const NUMBER_PREFIX = {
  security_deposit_insurance: "SDI",
  renter_guarantee_insurance: "RG",
  service_deposit: "DEP",
} as const

export interface ApplyRequest {
  readonly facts: EnrollmentFacts
  readonly product: ProductType
  readonly cadence: Cadence
  readonly answers: RenterAnswers
  readonly today: string
}

export type PayOutcome =
  { readonly paid: false; readonly reason: string } | { readonly paid: true; readonly policy: PolicyRow }

/**
 * Issuing: the renter's application, underwritten on the answers, and its payment, which issues the policy and
 * asks for its documents through `requestDocuments`.
 */
export const makeIssuing = (requestDocuments: (policy: PolicyRow) => Effect.Effect<unknown>) =>
  Effect.gen(function* () {
    const repo = yield* PoliciesRepo
    const outbox = yield* Outbox
    const provider = yield* PaymentProvider
    const enrollments = yield* Enrollments
    const config = yield* AppConfig

    /**
     * The renter chose a product: the application is created (`policy_application.created`), then underwritten on
     * the renter's answers: `quoted` with its price, or `declined` with the rules that failed (kept for operators,
     * never sent). In the caller's transaction.
     */
    const apply = Effect.fn("Policies.apply")(function* (request: ApplyRequest) {
      const { facts, product, cadence, today } = request
      const slug = facts.owner.slug
      const rules = ruleFacts(facts, today, request.answers)
      const coverage = coverageOf(product, rules)
      const start = facts.prospect.leaseStartDate ?? today
      const end = facts.prospect.leaseEndDate ?? today
      const asked = price(product, cadence, coverage, { start, end }, today)
      const created = yield* repo.insertApplication({
        prospect_id: facts.prospect.id,
        owner_id: facts.owner.id,
        property_id: facts.property?.id ?? null,
        unit_id: facts.unit?.id ?? null,
        outcome: "underwriting",
        product_type: product,
        product_version: product === "renter_guarantee_insurance" ? RENTER_GUARANTEE_VERSION : null,
        cadence,
        coverage_amount_cents: String(coverage),
        premium_cents: String(asked?.premiumCents ?? 0),
        payments: asked?.payments ?? 1,
        coverage_start_date: start,
        coverage_end_date: end,
        pms_type: facts.prospect.pmsType ?? facts.property?.pmsType ?? null,
        pms_property_id: facts.prospect.pmsPropertyId ?? facts.property?.pmsPropertyId ?? null,
        pms_unit_id: facts.prospect.pmsUnitId ?? facts.unit?.pmsUnitId ?? null,
        pms_resident_id: facts.prospect.pmsProspectId,
        source_prospect_id: facts.prospect.sourceProspectId,
      })
      const decision = underwrite(product, cadence, facts, request.answers, today)
      const decided = yield* repo.decideApplication(
        created.id,
        decision.accepted ? "quoted" : "declined",
        decision.accepted ? [] : decision.rules,
      )
      yield* outbox.enqueue([
        applicationEvent("policy_application.created", slug, created),
        applicationEvent(
          decision.accepted ? "policy_application.quoted" : "policy_application.declined",
          slug,
          decided,
        ),
      ])
      if (!decision.accepted) {
        yield* Effect.logInfo("application declined").pipe(
          Effect.annotateLogs({ application: applicationId(created.id), rules: decision.rules.join(",") }),
        )
      }
      return decided
    })

    /** A quoted application the renter turned away from (by choosing again); no event names this. */
    const cancelApplication = Effect.fn("Policies.cancelApplication")(function* (id: string) {
      yield* repo.cancelApplication(id)
    })
    /**
     * The renter pays a quoted application: the card is saved with the provider and the first payment charged
     * (the whole premium, or the first month's), keyed so that a retry is the same charge. A decline leaves the
     * application quoted. A charge that succeeds submits the application (`policy_application.submitted`), issues
     * the policy (`policy.created`) and asks for its documents, all in the caller's transaction. An application
     * already submitted answers with its policy and charges nothing.
     */
    const pay = Effect.fn("Policies.pay")(function* (
      application: ApplicationRow,
      card: Card,
      facts: EnrollmentFacts,
      today: string,
    ) {
      if (application.outcome === "submitted") {
        const issued = yield* repo.policyOfApplication(application.id)
        if (issued !== undefined) return { paid: true, policy: issued } satisfies PayOutcome
      }
      if (application.outcome !== "quoted" || application.status !== "created") {
        return yield* Effect.die(new Error(`application ${application.id} is not payable`))
      }
      const saved = yield* provider.saveCard(card)
      if (!saved.saved) return { paid: false, reason: saved.reason } satisfies PayOutcome
      const methodId = yield* repo.insertPaymentMethod({ provider: provider.name, ...saved.card })
      const attempt = (yield* repo.initialAttempts(application.id)) + 1
      const amount = Number(application.premium_cents)
      const idempotencyKey = `${applicationId(application.id)}-initial-${attempt}`
      const charged = yield* provider.charge({
        card: saved.card.reference,
        amountCents: amount,
        idempotencyKey,
        description: `${application.product_type} ${applicationId(application.id)}`,
        occasion: "enrollment",
      })
      const chargeId = yield* repo.insertCharge({
        application_id: application.id,
        policy_id: null,
        payment_method_id: methodId,
        kind: "initial",
        amount_cents: amount,
        status: charged.charged ? "succeeded" : "declined",
        provider_reference: charged.charged ? charged.reference : null,
        failure_reason: charged.charged ? null : charged.reason,
        idempotency_key: idempotencyKey,
      })
      if (!charged.charged) return { paid: false, reason: charged.reason } satisfies PayOutcome

      const slug = facts.owner.slug
      const submitted = yield* repo.submitApplication(application.id)
      const productType = policyProductOf(application.product_type)
      const property = facts.property
      const id = yield* repo.insertPolicy({
        number_prefix: NUMBER_PREFIX[productType],
        year: today.slice(0, 4),
        issued_on: today,
        application_id: application.id,
        prospect_id: facts.prospect.id,
        owner_id: facts.owner.id,
        property_id: application.property_id,
        unit_id: application.unit_id,
        status: statusOn(today, application.coverage_start_date),
        product_type: productType,
        product_version: application.product_version,
        cadence: application.cadence,
        premium_cents: application.premium_cents,
        payments: application.payments,
        coverage_amount_cents: application.coverage_amount_cents,
        coverage_start_date: application.coverage_start_date,
        coverage_end_date: application.coverage_end_date,
        payment_method_id: methodId,
        pms_type: application.pms_type,
        pms_property_id: application.pms_property_id,
        pms_unit_id: application.pms_unit_id,
        pms_resident_id: application.pms_resident_id,
        source_prospect_id: application.source_prospect_id,
        insured_name: `${facts.prospect.firstName ?? ""} ${facts.prospect.lastName ?? ""}`.trim(),
        premises:
          property === undefined
            ? ""
            : `${property.street}, ${property.city}, ${property.state} ${property.zip}`,
        unit_name: facts.unit?.name ?? "",
        policy_holder_name: property?.policyHolderName ?? facts.owner.name,
        // Monthly premiums run from the coverage start, or from today for a policy whose coverage already began.
        next_charge_on:
          application.cadence === "monthly" && application.payments > 1
            ? addMonths(billingAnchor(application.coverage_start_date, today), 1)
            : null,
      })
      yield* repo.attachCharge(chargeId, id)
      const policy = (yield* repo.findPolicy(id))!
      yield* outbox.enqueue([
        applicationEvent("policy_application.submitted", slug, submitted),
        policyEvent("policy.created", slug, policy, config.consoleBaseUrl),
      ])
      yield* requestDocuments(policy)
      yield* enrollments.recordApplicationSubmitted(facts.prospect.id)
      yield* Effect.logInfo("policy issued").pipe(
        Effect.annotateLogs({
          policy: policyId(id),
          policy_number: policy.policy_number,
          card_last4: saved.card.last4,
        }),
      )
      return { paid: true, policy } satisfies PayOutcome
    })
    return { apply, cancelApplication, pay }
  })

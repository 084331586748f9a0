import { randomBytes } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { IssuerConfig } from "./Config.ts"
import { Db } from "../platform/Db.ts"
import { ObjectStore } from "../platform/ObjectStore.ts"
import { Outbox } from "../platform/Outbox.ts"
import type { EnrollmentFacts } from "../prospects/Domain.ts"
import { decideEligibility } from "../prospects/Eligibility.ts"
import { Enrollments } from "../prospects/Enrollments.ts"
import {
  type ApplicationRow,
  applicationId,
  type Cadence,
  policyId,
  policyProductOf,
  type PolicyRow,
  type PolicyStatus,
  type ProductType,
  RENTER_GUARANTEE_VERSION,
} from "./Domain.ts"
import { archiveEntry, documentArchive } from "./Documents.ts"
import {
  applicationEvent,
  documentsRequested,
  documentsUpdated,
  type DocumentsRequested,
  policyEvent,
} from "./Events.ts"
import { type Card, PaymentProvider } from "./Payments.ts"
import { billingAnchor, percentSavings, price } from "./Pricing.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"
import { PoliciesRepo } from "./Repo.ts"
import { TestClocks } from "./TestClocks.ts"
import { coverageOf, offersFor, type RenterAnswers, ruleFacts, underwrite } from "./Underwriting.ts"

/** The object store bucket of policy archives (`<PREFIX>_POLICY_DOCUMENTS`); nothing in it is ever deleted. */
export const DOCUMENTS_BUCKET = "POLICY_DOCUMENTS"

/** An archive's object name: 32 random bytes, so its link cannot be guessed; the link is not access-controlled. */
export const ARCHIVE_NAME = /^[A-Za-z0-9_-]{43}\.zip$/
const newArchiveName = () => `${randomBytes(32).toString("base64url")}.zip`

/** Policy numbers name the product: `SDI-2026-000041`, `RG-...`, `DEP-...` (a cash deposit the service holds). */
const NUMBER_PREFIX = {
  security_deposit_insurance: "SDI",
  renter_guarantee_insurance: "RG",
  service_deposit: "DEP",
} as const

/** `YYYY-MM-DD` plus `months`, on the same day of the month or the month's last day. */
export const addMonths = (date: string, months: number) => {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number]
  const first = new Date(Date.UTC(y, m - 1 + months, 1))
  const last = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 0)).getUTCDate()
  first.setUTCDate(Math.min(d, last))
  return first.toISOString().slice(0, 10)
}

/** A policy is `upcoming` until its coverage starts, then `active`. */
export const statusOn = (today: string, start: string): PolicyStatus =>
  today < start ? "upcoming" : "active"

export interface ApplyRequest {
  readonly facts: EnrollmentFacts
  readonly product: ProductType
  readonly cadence: Cadence
  readonly answers: RenterAnswers
  readonly today: string
}

export type PayOutcome =
  { readonly paid: false; readonly reason: string } | { readonly paid: true; readonly policy: PolicyRow }

export class Policies extends Context.Service<Policies>()("partner-service/policies/Policies", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* PoliciesRepo
    const outbox = yield* Outbox
    const provider = yield* PaymentProvider
    const enrollments = yield* Enrollments
    const objects = yield* ObjectStore
    const config = yield* AppConfig
    const issuer = yield* IssuerConfig
    const clocks = yield* TestClocks

    const policyUrl = (objectName: string) =>
      `${config.enrollmentHost.replace(/\/+$/, "")}/documents/${objectName}`

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
     * Asks for a new generation of the policy's archive under a new unguessable name; the document actor makes it
     * and announces it (`policy.documents_updated`). Earlier archives stay as they are. In the caller's transaction.
     */
    const requestDocuments = Effect.fn("Policies.requestDocuments")(function* (policy: PolicyRow) {
      yield* repo.lockPolicy(policy.id)
      const generation = yield* repo.requestDocuments(policy.id, newArchiveName())
      yield* outbox.enqueue([documentsRequested(policy.owner_slug, policy.id, generation)])
      return generation
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

    /**
     * The document actor's work for one request: the archive (declaration and certificate) is made and stored under
     * the name chosen when it was requested, unless already there; then, once, the generation is marked stored,
     * `policy.documents_updated` announces its link and the prospect's `latest_coverage` points to it. A repeated
     * request finds the generation stored and does nothing.
     */
    const generateDocuments = Effect.fn("Policies.generateDocuments")(function* (
      request: DocumentsRequested,
    ) {
      const docs = yield* repo.documents(request.policy_id, request.generation)
      if (docs === undefined) return "unknown" as const
      if (docs.status === "stored") return "duplicate" as const
      const policy = (yield* repo.findPolicy(request.policy_id))!
      // On the owner's clock, as the policy was issued: a test clock's policy states the date it lives on.
      const issuedAt = yield* clocks.nowOf(policy.owner_id)
      const archive = yield* Effect.promise(() =>
        documentArchive({
          policyNumber: policy.policy_number,
          productType: policy.product_type,
          productVersion: policy.product_version,
          cadence: policy.cadence,
          premiumCents: Number(policy.premium_cents),
          payments: policy.payments,
          coverageAmountCents: Number(policy.coverage_amount_cents),
          coverageStartDate: policy.coverage_start_date,
          coverageEndDate: policy.coverage_end_date,
          renterName: policy.insured_name,
          address: policy.premises,
          unitName: policy.unit_name,
          policyHolderName: policy.policy_holder_name,
          issuedAt,
          insurerName: issuer.insurerName,
          supportEmail: issuer.supportEmail,
          supportPhone: issuer.supportPhone,
        }),
      )
      yield* objects.putOnce(
        DOCUMENTS_BUCKET,
        docs.object_name,
        archive,
        `${policy.policy_number} documents, generation ${docs.generation}`,
      )
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lockPolicy(policy.id)
          if (!(yield* repo.markDocumentsStored(policy.id, docs.generation))) return "duplicate" as const
          const current = (yield* repo.findPolicy(policy.id))!
          const url = policyUrl(docs.object_name)
          yield* outbox.enqueue([documentsUpdated(current.owner_slug, current, config.consoleBaseUrl, url)])
          if (current.prospect_id !== null) {
            yield* enrollments.recordLatestCoverage(current.prospect_id, {
              type: current.product_type,
              product_payment_cents: Number(current.premium_cents),
              cadence: current.cadence,
              coverage_start_date: current.coverage_start_date,
              coverage_end_date: current.coverage_end_date,
              coverage_amount_cents: Number(current.coverage_amount_cents),
              document_url: url,
            })
          }
          return "stored" as const
        }),
      )
    })

    /** Operators (and revisions): a new generation of a policy's documents, with a new link. */
    const regenerateDocuments = Effect.fn("Policies.regenerateDocuments")(function* (id: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const policy = yield* repo.findPolicy(id)
          if (policy === undefined) return undefined
          return yield* requestDocuments(policy)
        }),
      )
    })

    /** The bytes a documents link serves: only archives that were stored and announced, else undefined. */
    const archive = Effect.fn("Policies.archive")(function* (objectName: string) {
      if (!ARCHIVE_NAME.test(objectName)) return undefined
      if (!(yield* repo.isStoredArchive(objectName))) return undefined
      return yield* objects.get(DOCUMENTS_BUCKET, objectName)
    })

    /** One PDF of a stored archive, by its name inside it (the renter's page links each); else undefined. */
    const documentFile = Effect.fn("Policies.documentFile")(function* (objectName: string, file: string) {
      const bytes = yield* archive(objectName)
      return bytes === undefined ? undefined : yield* Effect.promise(() => archiveEntry(bytes, file))
    })

    /** The newest stored archive's link of a policy, if any. */
    const documentsUrlOf = Effect.fn("Policies.documentsUrlOf")(function* (id: string) {
      const latest = yield* repo.latestDocuments(id)
      return latest === undefined ? undefined : policyUrl(latest.object_name)
    })

    /** Why nothing can be offered: each product's reasons on the prospect as it is `today`. */
    const ineligibility = (facts: EnrollmentFacts, today: string) => {
      const decision = decideEligibility(ruleFacts(facts, today))
      return [
        ...new Set([
          ...decision.sdiIneligibilityReasons,
          ...decision.cdIneligibilityReasons,
          ...(decision.renterGuarantee?.reasons ?? []),
        ]),
      ]
    }

    return {
      /**
       * The date the journey runs on for an owner's renters: the owner's date (its test clock's in staging and
       * development), so a policy bought with the clock moved is issued, dated and billed as of that date.
       */
      todayOf: clocks.todayOf,
      /** The products and prices the prospect can be offered `today`, on the renter's answers once given. */
      offersFor,
      ineligibility,
      percentSavings,
      apply,
      cancelApplication,
      pay,
      requestDocuments,
      generateDocuments,
      regenerateDocuments,
      archive,
      documentFile,
      documentsUrlOf,
      findApplication: repo.findApplication,
      findPolicy: repo.findPolicy,
      policyOfApplication: repo.policyOfApplication,
    }
  }),
}) {
  static readonly layer = Layer.effect(Policies, Policies.make).pipe(
    Layer.provide(
      Layer.mergeAll(
        PoliciesRepo.layer,
        PaymentProvider.layer,
        ObjectStore.layer,
        IssuerConfig.layer,
        TestClocks.layer.pipe(Layer.provide(LifecycleRepo.layer)),
      ),
    ),
  )
}

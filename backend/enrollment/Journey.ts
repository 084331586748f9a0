import { Clock, Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { EnrollmentFacts, OfferedProduct } from "../prospects/Domain.ts"
import { isoDate } from "../prospects/Eligibility.ts"
import { decideEligibility } from "../prospects/Eligibility.ts"
import { Prospects } from "../prospects/Prospects.ts"
import { type ApplicationRow, applicationId, policyId, type PolicyRow } from "../policies/Domain.ts"
import { Policies } from "../policies/Policies.ts"
import { percentSavings } from "../policies/Pricing.ts"
import { offersFor, ruleFacts } from "../policies/Underwriting.ts"
import {
  type ChoiceInput,
  type DetailsInput,
  type EmploymentStatus,
  type JourneyError,
  type JourneyLink,
  type JourneyStep,
  type JourneyView,
  LinkInvalid,
  type Offer,
  type PaymentInput,
  type Preselection,
  type UnderwritingInput,
} from "./Domain.ts"
import { parseCard, parseChoice, parseDetails, parseUnderwriting } from "./Inputs.ts"
import { EnrollmentRepo, type EnrollmentRow } from "./Repo.ts"

/**
 * The renter's enrollment journey: the one orchestration behind the renter's pages and the CLI helper
 * (`npm run cli -- enrollment complete`). Every call checks the link again and answers with the journey as it is
 * after the call; a call that does not fit the step the renter is on (a double submit, a back button) changes
 * nothing and answers with the current step, so no call charges twice. What the renter can fix comes back in
 * `view.error` on the same step; only a link that names no journey fails (`LinkInvalid`).
 */
export interface JourneyShape {
  /** The journey as it stands; `preselection` is what an `offered_products` link names. */
  readonly open: (link: JourneyLink, preselection?: Preselection) => Effect.Effect<JourneyView, LinkInvalid>
  /** Step `details`: the renter confirms what the partner sent (and may correct the phone). */
  readonly confirmDetails: (link: JourneyLink, input: DetailsInput) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * Step `underwriting`: the last underwriting inputs; the offers (and the prospect's `offered_products`) are
   * filled. Nothing to offer any more (the building left the roster, the lease ended): `blocked`.
   */
  readonly supplyUnderwritingInputs: (
    link: JourneyLink,
    input: UnderwritingInput,
  ) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * Steps `choose` and `quote`: the renter picks an offered product and cadence; `policy_application.created`,
   * then underwriting: `policy_application.quoted` (step `quote`) or `policy_application.declined` (terminal
   * `declined`). Choosing again on `quote` cancels the quoted application and starts another.
   */
  readonly choose: (link: JourneyLink, input: ChoiceInput) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * Step `quote`: the renter pays through the payment provider. A declined card stays on `quote` with
   * `view.error`; a charge that succeeds submits the application (`policy_application.submitted`), issues the
   * policy (`policy.created`) and asks for its documents (`policy.documents_updated` follows): `completed`.
   */
  readonly pay: (link: JourneyLink, input: PaymentInput) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * The link of a prospect by its key, for the CLI helper (development and staging), which walks the journey as
   * the renter would. Not for the pages: they only ever act on the link they were given.
   */
  readonly linkFor: (source: string, sourceProspectId: string) => Effect.Effect<JourneyLink, LinkInvalid>
}

/** Where the journey stands, read under its lock: the renter's answers, the application and its policy. */
interface State {
  readonly facts: EnrollmentFacts
  readonly enrollment: EnrollmentRow | undefined
  readonly application: ApplicationRow | undefined
  readonly policy: PolicyRow | undefined
  readonly today: string
}

/** The offers as `offered_products` publishes them, with links preselecting product and cadence. */
export const offeredProducts = (
  offers: ReadonlyArray<Offer>,
  enrollmentUrl: string | null,
): Array<OfferedProduct> => {
  const link = (product: string, cadence: string) =>
    enrollmentUrl === null
      ? null
      : `${enrollmentUrl}&product=${encodeURIComponent(product)}&cadence=${encodeURIComponent(cadence)}`
  return offers.map((offer): OfferedProduct => {
    const premium = (cadence: string) =>
      offer.cadences.find((c) => c.cadence === cadence)?.premiumCents ?? null
    return offer.product === "cash_deposit"
      ? {
          product_type: "cash_deposit",
          cash_deposit_amount_cents: premium("upfront"),
          enrollment_url: link(offer.product, "upfront"),
        }
      : {
          product_type: offer.product,
          ...(offer.productVersion === undefined ? {} : { product_version: offer.productVersion }),
          upfront_premium_cents: premium("upfront"),
          monthly_premium_cents: premium("monthly"),
          upfront_enrollment_url: link(offer.product, "upfront"),
          monthly_enrollment_url: link(offer.product, "monthly"),
        }
  })
}

/** Why nothing can be offered any more: each product's reasons on the prospect as it is now. */
const blockedReasonOf = (facts: EnrollmentFacts, today: string) => {
  const decision = decideEligibility(ruleFacts(facts, today))
  const reasons = [
    ...new Set([
      ...decision.sdiIneligibilityReasons,
      ...decision.cdIneligibilityReasons,
      ...(decision.renterGuarantee?.reasons ?? []),
    ]),
  ]
  return `No product can be offered: ${reasons.join("; ") || "the prospect is not eligible"}`
}

export class Journey extends Context.Service<Journey, JourneyShape>()("partner-service/enrollment/Journey") {
  static readonly layer = Layer.effect(
    Journey,
    Effect.gen(function* () {
      const db = yield* Db
      const repo = yield* EnrollmentRepo
      const prospects = yield* Prospects
      const policies = yield* Policies

      const today = Effect.map(Clock.currentTimeMillis, isoDate)

      /** The prospect the link names, if the link may act on it; else LinkInvalid (with the reason, for logs). */
      const resolve = (link: JourneyLink) =>
        Effect.gen(function* () {
          const facts = yield* prospects.enrollmentFacts(link.source, link.sourceProspectId)
          if (facts === undefined) return yield* new LinkInvalid({ reason: "no such prospect" })
          if (facts.owner.slug !== link.ownerSlug) {
            return yield* new LinkInvalid({ reason: "the prospect belongs to another owner" })
          }
          if (
            facts.prospect.email === null ||
            facts.prospect.email.toLowerCase() !== link.email.trim().toLowerCase()
          ) {
            return yield* new LinkInvalid({ reason: "the email does not match the prospect's" })
          }
          return facts
        })

      /** Reads the journey's state; before the renter began, only a prospect eligible for something may start. */
      const stateOf = (facts: EnrollmentFacts) =>
        Effect.gen(function* () {
          const enrollment = yield* repo.find(facts.prospect.id)
          if (enrollment?.details_confirmed_at == null && !facts.prospect.eligible) {
            return yield* new LinkInvalid({
              reason: `the prospect is ${facts.prospect.status} and not eligible`,
            })
          }
          const application =
            enrollment?.application_id == null
              ? undefined
              : yield* policies.findApplication(enrollment.application_id)
          const policy =
            application?.outcome === "submitted"
              ? yield* policies.policyOfApplication(application.id)
              : undefined
          return { facts, enrollment, application, policy, today: yield* today } satisfies State
        })

      const stepOf = (state: State): JourneyStep => {
        const { enrollment, application } = state
        if (application?.outcome === "submitted") return "completed"
        if (application?.outcome === "declined") return "declined"
        if (enrollment?.details_confirmed_at == null) return "details"
        if (offersFor(state.facts, state.today).length === 0) return "blocked"
        if (enrollment.inputs_supplied_at === null) return "underwriting"
        if (application?.outcome === "quoted" && application.status === "created") return "quote"
        return "choose"
      }

      const viewOf = Effect.fnUntraced(function* (
        link: JourneyLink,
        state: State,
        extra: { readonly preselection?: Preselection | undefined; readonly error?: JourneyError } = {},
      ) {
        const { facts, enrollment, application, policy } = state
        const p = facts.prospect
        const step = stepOf(state)
        const offers = enrollment?.offers ?? []
        const preselected = (() => {
          const wanted = extra.preselection
          const offer = offers.find((o) => o.product === wanted?.product)
          if (offer === undefined) return undefined
          const cadence =
            offer.cadences.find((c) => c.cadence === wanted?.cadence)?.cadence ??
            (offer.cadences.length === 1 ? offer.cadences[0]!.cadence : undefined)
          return cadence === undefined ? undefined : { product: offer.product, cadence }
        })()
        const quote =
          application !== undefined &&
          (application.outcome === "quoted" || application.outcome === "submitted")
            ? {
                applicationId: applicationId(application.id),
                product: application.product_type,
                ...(application.product_version === null
                  ? {}
                  : { productVersion: application.product_version }),
                cadence: application.cadence,
                coverageAmountCents: Number(application.coverage_amount_cents),
                premiumCents: Number(application.premium_cents),
                dueNowCents: Number(application.premium_cents),
                payments: application.payments,
                coverageStartDate: application.coverage_start_date,
                coverageEndDate: application.coverage_end_date,
              }
            : undefined
        const documentsUrl = policy === undefined ? undefined : yield* policies.documentsUrlOf(policy.id)
        return {
          step,
          link,
          owner: {
            slug: facts.owner.slug,
            name: facts.owner.name,
            embeddedFrameAncestors: facts.owner.embeddedFrameAncestors,
          },
          redirectDomains: facts.source.redirectDomains,
          renter: {
            firstName: p.firstName ?? "",
            lastName: p.lastName ?? "",
            email: p.email ?? "",
            phone: enrollment?.phone ?? p.phone ?? "",
            birthdate: p.birthdate ?? "",
          },
          lease: {
            address: {
              lineOne: facts.property?.street ?? "",
              city: facts.property?.city ?? "",
              state: facts.property?.state ?? "",
              zip: facts.property?.zip ?? "",
            },
            buildingName: facts.property?.buildingName ?? "",
            unitName: facts.unit?.name ?? "",
            startDate: p.leaseStartDate ?? "",
            endDate: p.leaseEndDate ?? "",
            monthlyRentCents: p.monthlyRentCents ?? 0,
            depositAmountCents: p.depositAmountCents ?? 0,
          },
          answers:
            enrollment?.inputs_supplied_at != null
              ? {
                  yearlyIncome: Number(enrollment.yearly_income),
                  employmentStatus: enrollment.employment_status as EmploymentStatus,
                  hasSsn: enrollment.has_ssn,
                  termsAccepted: true,
                }
              : {
                  yearlyIncome: p.yearlyIncome,
                  employmentStatus: p.employmentStatus,
                  hasSsn: p.hasSsn,
                  termsAccepted: false,
                },
          offers,
          ...(preselected === undefined ? {} : { preselected }),
          ...(application === undefined ||
          application.outcome === "underwriting" ||
          application.status === "canceled"
            ? {}
            : {
                application: {
                  id: applicationId(application.id),
                  product: application.product_type,
                  cadence: application.cadence,
                  outcome: application.outcome,
                },
              }),
          ...(quote === undefined ? {} : { quote }),
          ...(policy === undefined
            ? {}
            : {
                policy: {
                  id: policyId(policy.id),
                  policyNumber: policy.policy_number,
                  status: policy.status,
                  productType: policy.product_type,
                  cadence: policy.cadence,
                  coverageAmountCents: Number(policy.coverage_amount_cents),
                  coverageStartDate: policy.coverage_start_date,
                  coverageEndDate: policy.coverage_end_date,
                  paidCents: Number(policy.premium_cents),
                  cardLast4: policy.card_last4,
                  ...(documentsUrl === undefined ? {} : { documentsUrl }),
                },
              }),
          ...(step === "blocked" ? { blockedReason: blockedReasonOf(facts, state.today) } : {}),
          ...(extra.error === undefined ? {} : { error: extra.error }),
        } satisfies JourneyView
      })

      /**
       * A call that changes the journey: the link resolved, then under the journey's lock in one transaction the
       * state read and `act` run on it; answers with the view after it (or with `act`'s error on the same step).
       */
      const change = (
        name: string,
        link: JourneyLink,
        act: (state: State) => Effect.Effect<JourneyError | undefined, LinkInvalid>,
      ) =>
        Effect.gen(function* () {
          const facts = yield* resolve(link)
          return yield* db.transaction(
            Effect.gen(function* () {
              yield* repo.lock(facts.prospect.id)
              const error = yield* act(yield* stateOf(facts))
              return yield* viewOf(link, yield* stateOf(facts), error === undefined ? {} : { error })
            }),
          )
        }).pipe(
          Effect.tapError((invalid) =>
            Effect.logInfo("enrollment link refused").pipe(Effect.annotateLogs({ reason: invalid.reason })),
          ),
          Effect.withSpan(`Journey.${name}`),
        )

      const fieldsError = (fields: Readonly<Record<string, string>>): JourneyError => ({
        kind: "fields",
        fields,
      })

      const open = (link: JourneyLink, preselection?: Preselection) =>
        Effect.gen(function* () {
          const facts = yield* resolve(link)
          return yield* viewOf(link, yield* stateOf(facts), { preselection })
        }).pipe(
          Effect.tapError((invalid) =>
            Effect.logInfo("enrollment link refused").pipe(Effect.annotateLogs({ reason: invalid.reason })),
          ),
          Effect.withSpan("Journey.open"),
        )

      const confirmDetails = (link: JourneyLink, input: DetailsInput) =>
        change("confirmDetails", link, (state) =>
          Effect.gen(function* () {
            const step = stepOf(state)
            if (step === "completed" || step === "declined" || step === "blocked") return undefined
            const parsed = parseDetails(input)
            if ("fields" in parsed) return fieldsError(parsed.fields)
            yield* repo.confirmDetails(state.facts.prospect.id, parsed.ok.phone)
            return undefined
          }),
        )

      const supplyUnderwritingInputs = (link: JourneyLink, input: UnderwritingInput) =>
        change("supplyUnderwritingInputs", link, (state) =>
          Effect.gen(function* () {
            const step = stepOf(state)
            if (step !== "underwriting" && step !== "choose" && step !== "quote") return undefined
            const parsed = parseUnderwriting(input)
            if ("fields" in parsed) return fieldsError(parsed.fields)
            const offers: ReadonlyArray<Offer> = offersFor(state.facts, state.today)
            // New answers: the quote made on the old ones no longer stands.
            if (state.application?.outcome === "quoted") {
              yield* policies.cancelApplication(state.application.id)
              yield* repo.setApplication(state.facts.prospect.id, null)
            }
            yield* repo.supplyInputs(state.facts.prospect.id, { ...parsed.ok, offers })
            const sdi = offers.find((o) => o.product === "security_deposit_insurance")
            yield* prospects.recordOffers(
              state.facts.prospect.id,
              offeredProducts(offers, state.facts.enrollmentUrl),
              percentSavings(
                state.facts.prospect.depositAmountCents ?? 0,
                sdi?.cadences.find((c) => c.cadence === "upfront")?.premiumCents,
              ),
            )
            return undefined
          }),
        )

      const choose = (link: JourneyLink, input: ChoiceInput) =>
        change("choose", link, (state) =>
          Effect.gen(function* () {
            const step = stepOf(state)
            if (step !== "choose" && step !== "quote") return undefined
            const enrollment = state.enrollment!
            const parsed = parseChoice(input, enrollment.offers ?? [])
            if ("fields" in parsed) return fieldsError(parsed.fields)
            const { product, cadence } = parsed.ok
            const current = state.application
            if (current?.outcome === "quoted" && current.status === "created") {
              if (current.product_type === product && current.cadence === cadence) return undefined
              yield* policies.cancelApplication(current.id)
            }
            const application = yield* policies.apply({
              facts: state.facts,
              product,
              cadence,
              answers: {
                yearlyIncome: Number(enrollment.yearly_income),
                employmentStatus: enrollment.employment_status as EmploymentStatus,
                hasSsn: enrollment.has_ssn === true,
              },
              today: state.today,
            })
            yield* repo.setApplication(state.facts.prospect.id, application.id)
            return undefined
          }),
        )

      const pay = (link: JourneyLink, input: PaymentInput) =>
        change("pay", link, (state) =>
          Effect.gen(function* () {
            if (stepOf(state) !== "quote") return undefined
            const card = parseCard(input, state.today)
            if ("fields" in card) return fieldsError(card.fields)
            const outcome = yield* policies.pay(state.application!, card.ok, state.facts, state.today)
            return outcome.paid ? undefined : ({ kind: "payment_declined", message: outcome.reason } as const)
          }),
        )

      const linkFor = (source: string, sourceProspectId: string) =>
        Effect.gen(function* () {
          const facts = yield* prospects.enrollmentFacts(source, sourceProspectId)
          if (facts === undefined || facts.prospect.email === null) {
            return yield* new LinkInvalid({ reason: "no such prospect" })
          }
          return {
            flow: facts.source.flow,
            ownerSlug: facts.owner.slug,
            source,
            sourceProspectId,
            email: facts.prospect.email,
          } satisfies JourneyLink
        })

      return Journey.of({ open, confirmDetails, supplyUnderwritingInputs, choose, pay, linkFor })
    }),
  ).pipe(Layer.provide(EnrollmentRepo.layer))
}

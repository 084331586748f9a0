import type { EnrollmentFacts, OfferedProduct } from "../prospects/Domain.ts"
import {
  type ApplicationRow,
  applicationId,
  policyId,
  type PolicyRow,
  type ProductType,
} from "../policies/Domain.ts"
import type {
  EmploymentStatus,
  JourneyError,
  JourneyLink,
  JourneyStep,
  JourneyView,
  Offer,
  Preselection,
} from "./Domain.ts"
import type { EnrollmentRow } from "./Repo.ts"

/** Where the journey stands, as read under its lock: the renter's answers, the application and its policy. */
export interface JourneyState {
  readonly facts: EnrollmentFacts
  readonly enrollment: EnrollmentRow | undefined
  readonly application: ApplicationRow | undefined
  readonly policy: PolicyRow | undefined
  readonly today: string
  /**
   * What the prospect can be offered today (underwriting's, by the policies service): on the renter's answers once
   * given, else on the partner's data.
   */
  readonly offers: ReadonlyArray<Offer>
  /** Why nothing can be offered, each product's reasons; read only when `offers` is empty. */
  readonly ineligibility: () => ReadonlyArray<string>
  /** The rules each product not offered fails (on the renter's answers once given); read on `choose`. */
  readonly notOffered: () => ReadonlyArray<{
    readonly product: ProductType
    readonly rules: ReadonlyArray<string>
  }>
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
const blockedReasonOf = (state: JourneyState) =>
  `No product can be offered: ${state.ineligibility().join("; ") || "the prospect is not eligible"}`

/**
 * Where the renter is, from the state. The offers kept on the journey are those the renter's answers passed, less
 * any underwriting refused since: `declined` once none is left. A journey that began but can offer nothing any
 * more on the prospect as it is now (the building left the roster) is `blocked`. A refused product alone returns
 * the renter to `choose`.
 */
export const stepOf = (state: JourneyState): JourneyStep => {
  const { enrollment, application } = state
  if (application?.outcome === "submitted") return "completed"
  if (enrollment?.inputs_supplied_at != null && (enrollment.offers ?? []).length === 0) return "declined"
  if (enrollment?.details_confirmed_at == null) return "details"
  if (state.offers.length === 0) return "blocked"
  if (enrollment.inputs_supplied_at === null) return "underwriting"
  if (application?.outcome === "quoted" && application.status === "created") return "quote"
  return "choose"
}

/**
 * The products the partner asked for that the renter is not offered, each with the rules it fails now; a product
 * taken off the offers since (underwriting refused it) keeps the rules it was refused on.
 */
const notOfferedOf = (state: JourneyState, offers: ReadonlyArray<Offer>) => {
  const failing = state.notOffered()
  const refused =
    state.application?.outcome === "declined"
      ? (state.application.declined_rules ?? [])
      : ([] as Array<string>)
  const products = new Set(failing.map((entry) => entry.product))
  const taken = (state.enrollment?.offers == null ? [] : state.offers)
    .filter((offer) => !offers.some((o) => o.product === offer.product) && !products.has(offer.product))
    .map((offer) => ({
      product: offer.product,
      rules: state.application?.product_type === offer.product ? refused : [],
    }))
  return [...failing, ...taken].filter((entry) => !offers.some((offer) => offer.product === entry.product))
}

/** What the pages show for the state; `documentsUrl` is the policy's newest archive, when there is one. */
export const journeyView = (
  link: JourneyLink,
  state: JourneyState,
  extra: {
    readonly preselection?: Preselection | undefined
    readonly error?: JourneyError | undefined
    readonly documentsUrl?: string | undefined
  } = {},
): JourneyView => {
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
    application !== undefined && (application.outcome === "quoted" || application.outcome === "submitted")
      ? {
          applicationId: applicationId(application.id),
          product: application.product_type,
          ...(application.product_version === null ? {} : { productVersion: application.product_version }),
          cadence: application.cadence,
          coverageAmountCents: Number(application.coverage_amount_cents),
          premiumCents: Number(application.premium_cents),
          dueNowCents: Number(application.premium_cents),
          payments: application.payments,
          coverageStartDate: application.coverage_start_date,
          coverageEndDate: application.coverage_end_date,
        }
      : undefined
  const documentsUrl = extra.documentsUrl
  return {
    step,
    link,
    owner: {
      slug: facts.owner.slug,
      name: facts.owner.name,
      displayName: facts.owner.displayName,
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
    ...(step === "choose" ? { notOffered: notOfferedOf(state, offers) } : {}),
    ...(step === "choose" && application?.outcome === "declined" && application.status === "created"
      ? { refused: { product: application.product_type, rules: application.declined_rules ?? [] } }
      : {}),
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
            paidOn: policy.issued_on,
            cardLast4: policy.card_last4,
            ...(policy.next_charge_on === null ? {} : { nextChargeOn: policy.next_charge_on }),
            ...(documentsUrl === undefined ? {} : { documentsUrl }),
          },
        }),
    ...(step === "blocked" ? { blockedReason: blockedReasonOf(state) } : {}),
    ...(extra.error === undefined ? {} : { error: extra.error }),
  } satisfies JourneyView
}

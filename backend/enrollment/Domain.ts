import { Schema } from "effect"
import type { EmploymentStatuses } from "../prospects/Domain.ts"
import type { Cadence, PolicyStatus, ProductType } from "../policies/Domain.ts"

/**
 * The renter's enrollment journey as the pages (and the CLI helper) see it. The link itself is the renter's
 * credential: every call names it again, and the journey checks it again.
 */

export type EnrollmentFlow = "embedded" | "expedited"

/** What an enrollment link names: `/enrollment/<flow>/<owner_slug>/<source>/<source_prospect_id>?email=...`. */
export interface JourneyLink {
  readonly flow: EnrollmentFlow
  readonly ownerSlug: string
  readonly source: string
  readonly sourceProspectId: string
  /** As the link carries it; compared with the prospect's case-insensitively. */
  readonly email: string
}

/** A link of `offered_products` preselects a product and, for products paid either way, a cadence. */
export interface Preselection {
  readonly product?: ProductType | undefined
  readonly cadence?: Cadence | undefined
}

/**
 * Where the renter is. `completed`, `declined` and `blocked` are terminal: the embedded page posts the step's
 * name to its parent window.
 */
export const JourneySteps = [
  "details",
  "underwriting",
  "choose",
  "quote",
  "completed",
  "declined",
  "blocked",
] as const
export type JourneyStep = (typeof JourneySteps)[number]
export const isTerminal = (step: JourneyStep) =>
  step === "completed" || step === "declined" || step === "blocked"

export type EmploymentStatus = (typeof EmploymentStatuses)[number]

/** The renter as the partner sent them; `phone` as corrected on the details step, if it was. */
export interface RenterDetails {
  readonly firstName: string
  readonly lastName: string
  readonly email: string
  readonly phone: string
  /** `YYYY-MM-DD` */
  readonly birthdate: string
}

export interface LeaseDetails {
  readonly address: {
    readonly lineOne: string
    readonly city: string
    readonly state: string
    readonly zip: string
  }
  readonly buildingName: string
  readonly unitName: string
  /** `YYYY-MM-DD` */
  readonly startDate: string
  readonly endDate: string
  readonly monthlyRentCents: number
  readonly depositAmountCents: number
}

/** The last underwriting inputs: the renter's answers once given, else what the partner sent (to prefill). */
export interface UnderwritingAnswers {
  /** Whole dollars a year. */
  readonly yearlyIncome: number | null
  readonly employmentStatus: EmploymentStatus | null
  readonly hasSsn: boolean | null
  readonly termsAccepted: boolean
}

/** One way to pay for an offered product and what it costs each time. */
export interface OfferedCadence {
  readonly cadence: Cadence
  /** The premium per payment (the whole premium upfront, or one month's); a cash deposit's amount. */
  readonly premiumCents: number
  /** How many payments: 1 upfront, the months of coverage monthly; absent on offers stored before it was kept. */
  readonly payments?: number
}

/** A product offered to the renter, priced by the pricing table. */
export interface Offer {
  readonly product: ProductType
  /** `2025.12.01` for the renter guarantee; absent otherwise. */
  readonly productVersion?: string
  readonly coverageAmountCents: number
  /** Security deposit insurance and the renter guarantee: upfront and monthly; a cash deposit: upfront only. */
  readonly cadences: ReadonlyArray<OfferedCadence>
}

/** The application underwriting accepted, as priced: what the renter pays on the quote step. */
export interface Quote {
  /** `pa_...` */
  readonly applicationId: string
  readonly product: ProductType
  readonly productVersion?: string
  readonly cadence: Cadence
  readonly coverageAmountCents: number
  /** Per payment: the whole premium upfront, or one month's. */
  readonly premiumCents: number
  /** What `pay` charges now (the first month's premium on a monthly cadence). */
  readonly dueNowCents: number
  /** Number of monthly payments over the coverage (1 upfront). */
  readonly payments: number
  readonly coverageStartDate: string
  readonly coverageEndDate: string
}

/** The policy issued when the renter paid. */
export interface IssuedPolicy {
  /** `policy_...` */
  readonly id: string
  readonly policyNumber: string
  readonly status: PolicyStatus
  readonly productType: "security_deposit_insurance" | "renter_guarantee_insurance" | "service_deposit"
  readonly cadence: Cadence
  readonly coverageAmountCents: number
  readonly coverageStartDate: string
  readonly coverageEndDate: string
  readonly paidCents: number
  /** `YYYY-MM-DD`: the day the renter paid and the policy was issued (the owner's date). */
  readonly paidOn: string
  readonly cardLast4: string
  /** The next monthly premium's due date (`YYYY-MM-DD`); absent when nothing more is due. */
  readonly nextChargeOn?: string
  /** The latest document archive (`policy_url`); absent until the first one is generated. */
  readonly documentsUrl?: string
}

/**
 * Something the renter can fix, shown on the step they are on: field messages keyed by the form's field names
 * (`phone`, `yearly_income`, `employment_status`, `has_ssn`, `terms_accepted`, `product`, `cadence`,
 * `card_number`, `expiry`, `cvc`, `name_on_card`, `postal_code`), or a card the payment provider declined.
 */
export type JourneyError =
  | { readonly kind: "fields"; readonly fields: Readonly<Record<string, string>> }
  | { readonly kind: "payment_declined"; readonly message: string }

/** Everything a page shows; each call answers with the journey as it is after the call. */
export interface JourneyView {
  readonly step: JourneyStep
  readonly link: JourneyLink
  readonly owner: {
    readonly slug: string
    readonly name: string
    /** The owner's brand name when it has one, else its name: the pages' header shows it. */
    readonly displayName: string
    /** HTTPS origins allowed to frame the embedded flow; empty: no framing. */
    readonly embeddedFrameAncestors: ReadonlyArray<string>
  }
  /** Hostnames an expedited link's `redirect_url` may point to (and their subdomains). */
  readonly redirectDomains: ReadonlyArray<string>
  readonly renter: RenterDetails
  readonly lease: LeaseDetails
  readonly answers: UnderwritingAnswers
  /** Filled once the renter supplied the underwriting inputs (the prospect's `offered_products` then too). */
  readonly offers: ReadonlyArray<Offer>
  /** The link's preselection, when it names an offered product (and an offered cadence of it). */
  readonly preselected?: { readonly product: ProductType; readonly cadence: Cadence }
  /** The application under way or decided, once the renter chose a product. */
  readonly application?: {
    /** `pa_...` */
    readonly id: string
    readonly product: ProductType
    readonly cadence: Cadence
    readonly outcome: "quoted" | "declined" | "submitted"
  }
  /**
   * On `choose`, when underwriting refused the product just chosen (a rule the renter's answers could not show,
   * such as a change the partner made since): the rules it failed, for the page to explain. The other offers stay.
   */
  readonly refused?: { readonly product: ProductType; readonly rules: ReadonlyArray<string> }
  /**
   * On `choose`: each product the partner asked for that is not offered to the renter, with the rules it fails
   * (for the page to say why in plain words; empty when no rule explains it).
   */
  readonly notOffered?: ReadonlyArray<{
    readonly product: ProductType
    readonly rules: ReadonlyArray<string>
  }>
  /** On `quote` (and kept on `completed`). */
  readonly quote?: Quote
  /** On `completed`. */
  readonly policy?: IssuedPolicy
  /** On `blocked`: why, for operators and the CLI helper (the renter's page stays neutral). */
  readonly blockedReason?: string
  readonly error?: JourneyError
}

export interface DetailsInput {
  /** A corrected phone, exactly 10 digits; omitted keeps the one shown, empty is refused (it was cleared). */
  readonly phone?: string | undefined
}

/** The underwriting step's form, as submitted. */
export interface UnderwritingInput {
  /** Whole dollars a year, digits (commas and a leading `$` are accepted). */
  readonly yearlyIncome: string
  readonly employmentStatus: string
  /** `yes` / `no` (or a boolean). */
  readonly hasSsn: string | boolean
  readonly termsAccepted: boolean
}

export interface ChoiceInput {
  readonly product: string
  /** Required for products paid either way; a cash deposit is upfront. */
  readonly cadence?: string | undefined
}

/** The card, as typed; never stored or logged (only the provider's reference and the last four digits). */
export interface PaymentInput {
  readonly cardNumber: string
  /** `MM/YY`, `MMYY`, `MM / YY` or `MM/YYYY` */
  readonly expiry: string
  readonly cvc: string
  readonly nameOnCard: string
  readonly postalCode?: string | undefined
}

/**
 * The link names no journey the renter may take: unknown owner, source or prospect, another owner's prospect, an
 * email that does not match, or a prospect not ready or eligible for no product (before the journey began). The
 * page shows one neutral "This link is not valid" page for every case, revealing nothing.
 */
export class LinkInvalid extends Schema.TaggedError<LinkInvalid>()("LinkInvalid", {
  /** For logs and operators only; never shown to the renter. */
  reason: Schema.String,
}) {}

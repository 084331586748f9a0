import type { EmploymentStatuses, EnrollmentFacts } from "../prospects/Domain.ts"
import {
  effectiveCoverage,
  type EligibilityFacts,
  failingRules,
  type Product,
} from "../prospects/Eligibility.ts"
import { type Cadence, type ProductType, ProductTypes, RENTER_GUARANTEE_VERSION } from "./Domain.ts"
import { cadencesOf, price } from "./Pricing.ts"

/**
 * Underwriting applies the eligibility rule table (`backend/prospects/Eligibility.ts`, one source of truth for
 * every rule and number) to the chosen product, on the prospect as it is now with the renter's own answers in
 * place of what the partner sent. Offers come from the same table on the partner's data, so a product offered is
 * declined only when the renter's answers fail one of its rules.
 */

/** The last underwriting inputs, as the renter gave them. */
export interface RenterAnswers {
  /** Whole dollars a year. */
  readonly yearlyIncome: number
  readonly employmentStatus: (typeof EmploymentStatuses)[number]
  readonly hasSsn: boolean
}

/** What the rule table reads, from the prospect now and, for underwriting, the renter's answers. */
export const ruleFacts = (
  facts: EnrollmentFacts,
  today: string,
  answers?: RenterAnswers,
): EligibilityFacts => ({
  owner: { active: facts.owner.active, maxCoverageAmountCents: facts.owner.maxCoverageAmountCents },
  property: facts.property && {
    active: facts.property.active,
    defaultCoverage: { type: "multiplier", value: facts.property.defaultCoverageMultiplier },
    renterGuaranteeEnabled: facts.property.renterGuaranteeEnabled,
  },
  unit: facts.unit && {
    defaultCoverage:
      facts.unit.defaultCoverageMultiplier === null
        ? null
        : { type: "multiplier", value: facts.unit.defaultCoverageMultiplier },
  },
  prospect: {
    monthlyRentCents: facts.prospect.monthlyRentCents,
    depositAmountCents: facts.prospect.depositAmountCents,
    screeningResult: facts.prospect.screeningResult,
    yearlyIncome: answers === undefined ? facts.prospect.yearlyIncome : answers.yearlyIncome,
    hasSsn: answers === undefined ? facts.prospect.hasSsn : answers.hasSsn,
    birthdate: facts.prospect.birthdate,
    leaseStartDate: facts.prospect.leaseStartDate,
    leaseEndDate: facts.prospect.leaseEndDate,
    guarantorCoverage: facts.prospect.guarantorCoverage,
  },
  today,
})

/** A product is considered only where the partner asked for it: the renter guarantee needs guarantor coverage. */
const considered = (product: ProductType, facts: EnrollmentFacts) =>
  product !== "renter_guarantee_insurance" || facts.prospect.guarantorCoverage

/** The coverage a product gives: the effective coverage for insurance, the deposit itself for a cash deposit. */
export const coverageOf = (product: ProductType, facts: EligibilityFacts) =>
  product === "cash_deposit" ? (facts.prospect.depositAmountCents ?? 0) : (effectiveCoverage(facts) ?? 0)

export interface PricedProduct {
  readonly product: ProductType
  readonly productVersion?: string
  readonly coverageAmountCents: number
  readonly cadences: ReadonlyArray<{
    readonly cadence: Cadence
    readonly premiumCents: number
    readonly payments: number
  }>
}

const versionOf = (product: ProductType) =>
  product === "renter_guarantee_insurance" ? { productVersion: RENTER_GUARANTEE_VERSION } : {}

/**
 * The products that pass the rules now, each priced on every cadence: on the partner's data, or, once the renter
 * answered, with their answers in its place (what the choose page offers and `offered_products` publishes).
 */
export const offersFor = (
  facts: EnrollmentFacts,
  today: string,
  answers?: RenterAnswers,
): ReadonlyArray<PricedProduct> => {
  const rules = ruleFacts(facts, today, answers)
  const lease = { start: facts.prospect.leaseStartDate ?? today, end: facts.prospect.leaseEndDate ?? today }
  return ProductTypes.filter(
    (product) => considered(product, facts) && failingRules(product as Product, rules).length === 0,
  ).map((product) => {
    const coverage = coverageOf(product, rules)
    return {
      product,
      ...versionOf(product),
      coverageAmountCents: coverage,
      cadences: cadencesOf(product).map((cadence) => {
        const { premiumCents, payments } = price(product, cadence, coverage, lease, today)!
        return { cadence, premiumCents, payments }
      }),
    }
  })
}

/**
 * Why each product the partner asked for is not offered `today`: the rules it fails, on the renter's answers once
 * given (products that pass are left out; a product the partner did not ask for is not listed).
 */
export const productsNotOffered = (
  facts: EnrollmentFacts,
  today: string,
  answers?: RenterAnswers,
): ReadonlyArray<{ readonly product: ProductType; readonly rules: ReadonlyArray<string> }> => {
  const rules = ruleFacts(facts, today, answers)
  return ProductTypes.filter((product) => considered(product, facts))
    .map((product) => ({ product, rules: failingRules(product as Product, rules).map((r) => r.name) }))
    .filter((entry) => entry.rules.length > 0)
}

export type UnderwritingDecision =
  | {
      readonly accepted: true
      readonly coverageAmountCents: number
      readonly premiumCents: number
      readonly payments: number
    }
  | { readonly accepted: false; readonly rules: ReadonlyArray<string> }

/** The chosen product on the renter's answers: accepted and priced, or declined with the rules that failed. */
export const underwrite = (
  product: ProductType,
  cadence: Cadence,
  facts: EnrollmentFacts,
  answers: RenterAnswers,
  today: string,
): UnderwritingDecision => {
  const rules = ruleFacts(facts, today, answers)
  const failing = considered(product, facts)
    ? failingRules(product as Product, rules).map((r) => r.name)
    : ["guarantor_coverage_not_requested"]
  if (failing.length > 0) return { accepted: false, rules: failing }
  const coverage = coverageOf(product, rules)
  const priced = price(
    product,
    cadence,
    coverage,
    { start: facts.prospect.leaseStartDate ?? today, end: facts.prospect.leaseEndDate ?? today },
    today,
  )
  if (priced === undefined) return { accepted: false, rules: ["cadence_not_offered"] }
  return {
    accepted: true,
    coverageAmountCents: coverage,
    premiumCents: priced.premiumCents,
    payments: priced.payments,
  }
}

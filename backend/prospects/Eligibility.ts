/**
 * The service's eligibility and underwriting policy: one table of named rules, each with the human-readable reason
 * a partner reads in `sdi_ineligibility_reasons`, `cd_ineligibility_reasons` or `rg_ineligibility_reasons`. Pure:
 * the eligibility actor gathers the facts, `decideEligibility` applies the table to what the partner sent (a
 * rule whose input the partner did not send passes: the renter supplies it in the enrollment flow), and
 * underwriting (`backend/policies/Underwriting.ts`) applies the same table, with the same numbers, to the chosen
 * product on the renter's confirmed inputs. So a product the prospect is eligible for is declined only when the
 * renter's own answers fail a rule.
 */

import type { EligibilityFactsRow } from "./EligibilityRepo.ts"
import { toInt } from "./View.ts"

export type Product = "security_deposit_insurance" | "cash_deposit" | "renter_guarantee_insurance"

export interface Coverage {
  readonly type: "multiplier"
  readonly value: number
}

/** What eligibility looks at, as resolved from the roster and the prospect. */
export interface EligibilityFacts {
  readonly owner: { readonly active: boolean; readonly maxCoverageAmountCents: number | null }
  /** Undefined when the prospect's property could not be resolved on the owner's roster. */
  readonly property:
    | {
        readonly active: boolean
        readonly defaultCoverage: Coverage
        readonly renterGuaranteeEnabled: boolean
      }
    | undefined
  /** Undefined when the unit could not be resolved within the property. */
  readonly unit: { readonly defaultCoverage: Coverage | null } | undefined
  readonly prospect: {
    readonly monthlyRentCents: number | null
    readonly depositAmountCents: number | null
    readonly screeningResult: "approved" | "conditional" | "denied" | null
    readonly yearlyIncome: number | null
    readonly hasSsn: boolean | null
    /** `YYYY-MM-DD` */
    readonly birthdate: string | null
    readonly leaseStartDate: string | null
    readonly leaseEndDate: string | null
    readonly guarantorCoverage: boolean
  }
  /** `YYYY-MM-DD`, from the Clock of whoever decides. */
  readonly today: string
}

export interface EligibilityRule {
  readonly name: string
  readonly products: ReadonlyArray<Product>
  /** The reason shown when the rule fails. */
  readonly reason: string
  readonly passes: (facts: EligibilityFacts, coverageCents: number | null) => boolean
}

const ALL: ReadonlyArray<Product> = [
  "security_deposit_insurance",
  "cash_deposit",
  "renter_guarantee_insurance",
]
export const MINIMUM_AGE = 18
/** A renter guarantee needs yearly income of at least this many times the monthly rent. */
export const RG_INCOME_TO_RENT = 40
/** Deposit insurance needs yearly income of at least this many times the monthly rent (half the income). */
export const SDI_INCOME_TO_RENT = 24
/** Deposit insurance covers a deposit of at most this many months of rent. */
export const SDI_MAX_DEPOSIT_TO_RENT = 3

/** Yearly income (whole dollars) of at least `multiple` times the monthly rent (cents); unknown passes. */
const incomeCovers = (f: EligibilityFacts, multiple: number) =>
  f.prospect.monthlyRentCents === null ||
  f.prospect.yearlyIncome === null ||
  f.prospect.yearlyIncome * 100 >= multiple * f.prospect.monthlyRentCents

const yearsBetween = (from: string, to: string) => {
  const [fy, fm, fd] = from.split("-").map(Number) as [number, number, number]
  const [ty, tm, td] = to.split("-").map(Number) as [number, number, number]
  return ty - fy - (tm < fm || (tm === fm && td < fd) ? 1 : 0)
}

/** The policy, in the order reasons are listed. */
export const eligibilityRules: ReadonlyArray<EligibilityRule> = [
  {
    name: "property_present",
    products: ALL,
    reason: "Property must be present",
    passes: (f) => f.property !== undefined,
  },
  {
    name: "property_on_roster",
    products: ALL,
    reason: "Property is not on the owner's roster",
    passes: (f) => f.property === undefined || f.property.active,
  },
  {
    name: "unit_present",
    products: ALL,
    reason: "Unit must be present",
    passes: (f) => f.property === undefined || f.unit !== undefined,
  },
  {
    name: "owner_active",
    products: ALL,
    reason: "Property owner is not accepting enrollments yet",
    passes: (f) => f.owner.active,
  },
  {
    name: "lease_dates_in_order",
    products: ALL,
    reason: "Lease end date must be after the lease start date",
    passes: (f) =>
      f.prospect.leaseStartDate === null ||
      f.prospect.leaseEndDate === null ||
      f.prospect.leaseEndDate > f.prospect.leaseStartDate,
  },
  {
    name: "lease_not_ended",
    products: ALL,
    reason: "Lease has already ended",
    passes: (f) => f.prospect.leaseEndDate === null || f.prospect.leaseEndDate >= f.today,
  },
  {
    name: "monthly_rent_present",
    products: ["security_deposit_insurance", "renter_guarantee_insurance"],
    reason: "Monthly rent must be greater than zero",
    passes: (f) => (f.prospect.monthlyRentCents ?? 0) > 0,
  },
  {
    name: "coverage_above_zero",
    products: ["security_deposit_insurance"],
    reason: "Coverage amount must be greater than zero",
    passes: (_f, coverage) => coverage === null || coverage > 0,
  },
  {
    name: "screening_not_denied",
    products: ["security_deposit_insurance", "renter_guarantee_insurance"],
    reason: "Screening result is denied",
    passes: (f) => f.prospect.screeningResult !== "denied",
  },
  {
    name: "deposit_within_limit",
    products: ["security_deposit_insurance"],
    reason: `Deposit must be at most ${SDI_MAX_DEPOSIT_TO_RENT} times the monthly rent`,
    passes: (f) =>
      f.prospect.depositAmountCents === null ||
      f.prospect.monthlyRentCents === null ||
      f.prospect.depositAmountCents <= SDI_MAX_DEPOSIT_TO_RENT * f.prospect.monthlyRentCents,
  },
  {
    name: "sdi_income_covers_rent",
    products: ["security_deposit_insurance"],
    reason: `Yearly income must be at least ${SDI_INCOME_TO_RENT} times the monthly rent`,
    passes: (f) => incomeCovers(f, SDI_INCOME_TO_RENT),
  },
  {
    name: "deposit_present",
    products: ["cash_deposit"],
    reason: "Deposit amount must be greater than zero",
    passes: (f) => (f.prospect.depositAmountCents ?? 0) > 0,
  },
  {
    name: "renter_guarantee_offered",
    products: ["renter_guarantee_insurance"],
    reason: "Renter guarantee is not offered at this property",
    passes: (f) => f.property === undefined || f.property.renterGuaranteeEnabled,
  },
  {
    name: "renter_of_age",
    products: ["renter_guarantee_insurance"],
    reason: `Renter must be at least ${MINIMUM_AGE} years old`,
    passes: (f) =>
      f.prospect.birthdate === null || yearsBetween(f.prospect.birthdate, f.today) >= MINIMUM_AGE,
  },
  {
    name: "social_security_number",
    products: ["renter_guarantee_insurance"],
    reason: "A Social Security number is required",
    passes: (f) => f.prospect.hasSsn === true,
  },
  {
    name: "income_covers_rent",
    products: ["renter_guarantee_insurance"],
    reason: `Yearly income must be at least ${RG_INCOME_TO_RENT} times the monthly rent`,
    passes: (f) => incomeCovers(f, RG_INCOME_TO_RENT),
  },
]

/** The rules `product` fails on `facts`, in the table's order. */
export const failingRules = (product: Product, facts: EligibilityFacts) => {
  const coverage = effectiveCoverage(facts)
  return eligibilityRules.filter((r) => r.products.includes(product) && !r.passes(facts, coverage))
}

export interface EligibilityDecision {
  /** The unit's multiplier, else the property's, times monthly rent, capped by the owner's ceiling. */
  readonly effectiveCoverageAmountCents: number | null
  readonly sdiIneligibilityReasons: ReadonlyArray<string>
  readonly cdIneligibilityReasons: ReadonlyArray<string>
  /** Present only when the prospect asked for guarantor coverage. */
  readonly renterGuarantee:
    { readonly status: "eligible" | "ineligible"; readonly reasons: ReadonlyArray<string> } | undefined
  /** Enrollment links are issued only when this holds. */
  readonly eligibleForAnyProduct: boolean
}

export const effectiveCoverage = (facts: EligibilityFacts): number | null => {
  const multiplier = facts.unit?.defaultCoverage?.value ?? facts.property?.defaultCoverage.value
  const rent = facts.prospect.monthlyRentCents
  if (multiplier === undefined || rent === null) return null
  const coverage = Math.round(multiplier * rent)
  const ceiling = facts.owner.maxCoverageAmountCents
  return ceiling === null ? coverage : Math.min(coverage, ceiling)
}

/** Applies every rule; a product is offered when none of its rules fails. */
export const decideEligibility = (facts: EligibilityFacts): EligibilityDecision => {
  const coverage = effectiveCoverage(facts)
  const reasonsFor = (product: Product) => failingRules(product, facts).map((r) => r.reason)
  const sdi = reasonsFor("security_deposit_insurance")
  const cd = reasonsFor("cash_deposit")
  const rg = facts.prospect.guarantorCoverage ? reasonsFor("renter_guarantee_insurance") : undefined
  return {
    effectiveCoverageAmountCents: coverage,
    sdiIneligibilityReasons: sdi,
    cdIneligibilityReasons: cd,
    renterGuarantee:
      rg === undefined ? undefined : { status: rg.length === 0 ? "eligible" : "ineligible", reasons: rg },
    eligibleForAnyProduct: sdi.length === 0 || cd.length === 0 || rg?.length === 0,
  }
}

/** What the eligibility policy reads, from the stored prospect, owner, building and unit. */
export const factsOf = (facts: EligibilityFactsRow, today: string): EligibilityFacts => {
  const p = facts.prospect
  return {
    owner: {
      active: facts.owner.purchase_flow_enabled,
      maxCoverageAmountCents: toInt(facts.owner.max_coverage_amount_cents),
    },
    property: facts.property && {
      active: facts.property.active,
      defaultCoverage: { type: "multiplier", value: Number(facts.property.default_coverage_value) },
      renterGuaranteeEnabled: facts.property.renter_guarantee_enabled,
    },
    unit: facts.property &&
      facts.unit && {
        defaultCoverage:
          facts.unit.default_coverage_value === null
            ? null
            : { type: "multiplier", value: Number(facts.unit.default_coverage_value) },
      },
    prospect: {
      monthlyRentCents: toInt(p.monthly_rent_cents),
      depositAmountCents: toInt(p.deposit_amount_cents),
      screeningResult: p.screening_result as EligibilityFacts["prospect"]["screeningResult"],
      yearlyIncome: toInt(p.yearly_income),
      hasSsn: p.has_ssn,
      birthdate: p.birthdate,
      leaseStartDate: p.lease_start_date,
      leaseEndDate: p.lease_end_date,
      guarantorCoverage: p.guarantor_coverage,
    },
    today,
  }
}

export const isoDate = (millis: number) => new Date(millis).toISOString().slice(0, 10)

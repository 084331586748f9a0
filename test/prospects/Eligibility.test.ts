import { describe, expect, it } from "vitest"
import {
  decideEligibility,
  type EligibilityFacts,
  eligibilityRules,
} from "../../backend/prospects/Eligibility.ts"

/** An eligible prospect at an active building of an active owner; each case changes one fact. */
const eligible: EligibilityFacts = {
  owner: { active: true, maxCoverageAmountCents: null },
  property: { active: true, defaultCoverage: { type: "multiplier", value: 1 }, renterGuaranteeEnabled: true },
  unit: { defaultCoverage: null },
  prospect: {
    monthlyRentCents: 200_000,
    depositAmountCents: 250_000,
    screeningResult: "approved",
    yearlyIncome: 90_000,
    hasSsn: true,
    birthdate: "1990-05-15",
    leaseStartDate: "2026-12-01",
    leaseEndDate: "2027-11-30",
    guarantorCoverage: true,
  },
  today: "2026-11-21",
}

const withProspect = (changes: Partial<EligibilityFacts["prospect"]>): EligibilityFacts => ({
  ...eligible,
  prospect: { ...eligible.prospect, ...changes },
})

describe("eligibility", () => {
  it("offers every product to a complete prospect at an active building, with no reason recorded", () => {
    expect(decideEligibility(eligible)).toEqual({
      effectiveCoverageAmountCents: 200_000,
      sdiIneligibilityReasons: [],
      cdIneligibilityReasons: [],
      renterGuarantee: { status: "eligible", reasons: [] },
      eligibleForAnyProduct: true,
    })
  })

  it("gives 'Property must be present' for every product when the property is not resolved", () => {
    const decision = decideEligibility({ ...eligible, property: undefined, unit: undefined })
    expect(decision.sdiIneligibilityReasons).toEqual(["Property must be present"])
    expect(decision.cdIneligibilityReasons).toEqual(["Property must be present"])
    expect(decision.renterGuarantee).toEqual({ status: "ineligible", reasons: ["Property must be present"] })
    expect(decision.eligibleForAnyProduct).toBe(false)
    expect(decision.effectiveCoverageAmountCents).toBeNull()
  })

  it("refuses a building removed from the roster and a unit that is not resolved", () => {
    const inactive = decideEligibility({ ...eligible, property: { ...eligible.property!, active: false } })
    expect(inactive.sdiIneligibilityReasons).toEqual(["Property is not on the owner's roster"])
    const noUnit = decideEligibility({ ...eligible, unit: undefined })
    expect(noUnit.cdIneligibilityReasons).toEqual(["Unit must be present"])
    expect(noUnit.eligibleForAnyProduct).toBe(false)
  })

  it("offers nothing until the owner is active", () => {
    const decision = decideEligibility({ ...eligible, owner: { ...eligible.owner, active: false } })
    expect(decision.sdiIneligibilityReasons).toEqual(["Property owner is not accepting enrollments yet"])
    expect(decision.eligibleForAnyProduct).toBe(false)
  })

  it("takes coverage from the unit's multiplier, else the property's, times monthly rent, capped by the owner", () => {
    expect(decideEligibility(eligible).effectiveCoverageAmountCents).toBe(200_000)
    const unitMultiplier = {
      ...eligible,
      unit: { defaultCoverage: { type: "multiplier" as const, value: 1.5 } },
    }
    expect(decideEligibility(unitMultiplier).effectiveCoverageAmountCents).toBe(300_000)
    const capped = { ...unitMultiplier, owner: { active: true, maxCoverageAmountCents: 250_000 } }
    expect(decideEligibility(capped).effectiveCoverageAmountCents).toBe(250_000)
  })

  it("keeps the products apart: a missing deposit refuses only the cash deposit", () => {
    const decision = decideEligibility(withProspect({ depositAmountCents: null }))
    expect(decision.cdIneligibilityReasons).toEqual(["Deposit amount must be greater than zero"])
    expect(decision.sdiIneligibilityReasons).toEqual([])
    expect(decision.eligibleForAnyProduct).toBe(true)
  })

  it("refuses deposit insurance and the renter guarantee to a denied screening, not the cash deposit", () => {
    const decision = decideEligibility(withProspect({ screeningResult: "denied" }))
    expect(decision.sdiIneligibilityReasons).toEqual(["Screening result is denied"])
    expect(decision.renterGuarantee?.reasons).toEqual(["Screening result is denied"])
    expect(decision.cdIneligibilityReasons).toEqual([])
  })

  it("lists every failing rule of a product, in the table's order", () => {
    const decision = decideEligibility(
      withProspect({
        hasSsn: false,
        birthdate: "2010-01-01",
        yearlyIncome: 10_000,
        leaseEndDate: "2026-01-01",
      }),
    )
    expect(decision.renterGuarantee).toEqual({
      status: "ineligible",
      reasons: [
        "Lease end date must be after the lease start date",
        "Lease has already ended",
        "Renter must be at least 18 years old",
        "A Social Security number is required",
        "Yearly income must be at least 40 times the monthly rent",
      ],
    })
  })

  it("counts a renter's age to the day", () => {
    expect(decideEligibility(withProspect({ birthdate: "2008-11-21" })).renterGuarantee?.status).toBe(
      "eligible",
    )
    expect(decideEligibility(withProspect({ birthdate: "2008-11-22" })).renterGuarantee?.reasons).toEqual([
      "Renter must be at least 18 years old",
    ])
  })

  it("decides the renter guarantee only when guarantor coverage is asked for", () => {
    const decision = decideEligibility(withProspect({ guarantorCoverage: false, hasSsn: false }))
    expect(decision.renterGuarantee).toBeUndefined()
    expect(decision.eligibleForAnyProduct).toBe(true)
  })

  it("does not offer the renter guarantee where the building does not", () => {
    const decision = decideEligibility({
      ...eligible,
      property: { ...eligible.property!, renterGuaranteeEnabled: false },
    })
    expect(decision.renterGuarantee?.reasons).toEqual(["Renter guarantee is not offered at this property"])
  })

  it("names every rule once, with a reason", () => {
    const names = eligibilityRules.map((r) => r.name)
    expect(new Set(names).size).toBe(names.length)
    for (const rule of eligibilityRules) expect(rule.reason).toMatch(/^[A-Z].+[^.]$/)
  })
})

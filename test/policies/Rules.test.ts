import { describe, expect, it } from "vitest"
import type { EnrollmentFacts } from "../../backend/prospects/Domain.ts"
import { decideEligibility } from "../../backend/prospects/Eligibility.ts"
import { coverageMonths, percentSavings, premiumRules, price } from "../../backend/policies/Pricing.ts"
import { offersFor, ruleFacts, underwrite } from "../../backend/policies/Underwriting.ts"

const LEASE = { start: "2026-02-01", end: "2027-01-31" }
const TODAY = "2026-01-15"

/** A prospect eligible for every product at a building with the renter guarantee. */
const facts = (prospect: Partial<EnrollmentFacts["prospect"]> = {}): EnrollmentFacts => ({
  prospect: {
    id: "1",
    version: 1,
    source: "s",
    sourceProspectId: "p",
    status: "ready",
    eligible: true,
    email: "a@b.co",
    phone: "5551234567",
    firstName: "A",
    lastName: "B",
    birthdate: "1990-05-15",
    leaseStartDate: LEASE.start,
    leaseEndDate: LEASE.end,
    monthlyRentCents: 200_000,
    depositAmountCents: 250_000,
    screeningResult: "approved",
    employmentStatus: "employed",
    yearlyIncome: 95_000,
    hasSsn: true,
    termsAcceptedAt: "2025-01-15T10:30:00Z",
    guarantorCoverage: true,
    pmsType: null,
    pmsPropertyId: null,
    pmsUnitId: null,
    pmsProspectId: null,
    applicationSubmitted: false,
    ...prospect,
  },
  source: { flow: "embedded", redirectDomains: [] },
  owner: {
    id: "1",
    slug: "o",
    name: "O",
    displayName: "O",
    active: true,
    maxCoverageAmountCents: null,
    embeddedFrameAncestors: [],
  },
  property: {
    id: "1",
    buildingName: "Tower",
    street: "1 Main St",
    city: "Springfield",
    state: "IL",
    zip: "62701",
    active: true,
    renterGuaranteeEnabled: true,
    defaultCoverageMultiplier: 1,
    pmsType: null,
    pmsPropertyId: null,
    policyHolderName: "O, LLC",
  },
  unit: { id: "1", name: "4B", pmsUnitId: null, defaultCoverageMultiplier: null },
  enrollmentUrl: "https://enroll.test/enrollment/embedded/o/s/p?email=a%40b.co",
})

const answers = { yearlyIncome: 95_000, employmentStatus: "employed", hasSsn: true } as const

describe("the pricing table", () => {
  it("charges a rate of the coverage with a minimum, upfront or each month", () => {
    expect(premiumRules.security_deposit_insurance).toEqual({
      upfrontRateBasisPoints: 500,
      upfrontMinimumCents: 5_000,
      monthlyRateBasisPoints: 50,
      monthlyMinimumCents: 500,
    })
    expect(price("security_deposit_insurance", "upfront", 200_000, LEASE, TODAY)).toEqual({
      cadence: "upfront",
      premiumCents: 10_000,
      payments: 1,
    })
    expect(price("security_deposit_insurance", "monthly", 200_000, LEASE, TODAY)).toEqual({
      cadence: "monthly",
      premiumCents: 1_000,
      payments: 12,
    })
    expect(price("security_deposit_insurance", "upfront", 50_000, LEASE, TODAY)!.premiumCents).toBe(5_000)
    expect(price("security_deposit_insurance", "monthly", 50_000, LEASE, TODAY)!.premiumCents).toBe(500)
    expect(price("renter_guarantee_insurance", "upfront", 200_000, LEASE, TODAY)!.premiumCents).toBe(16_000)
    expect(price("renter_guarantee_insurance", "monthly", 200_000, LEASE, TODAY)!.premiumCents).toBe(1_600)
    expect(price("renter_guarantee_insurance", "upfront", 10_000, LEASE, TODAY)!.premiumCents).toBe(10_000)
    expect(price("security_deposit_insurance", "upfront", 200_001, LEASE, TODAY)!.premiumCents).toBe(10_001)
  })

  it("takes a cash deposit upfront only, for exactly the deposit", () => {
    expect(price("cash_deposit", "upfront", 250_000, LEASE, TODAY)).toEqual({
      cadence: "upfront",
      premiumCents: 250_000,
      payments: 1,
    })
    expect(price("cash_deposit", "monthly", 250_000, LEASE, TODAY)).toBeUndefined()
  })

  it("charges a monthly plan bought after the lease began for the months still to come", () => {
    // Bought on November 26th for a lease to January 31st: November 26th, December 26th and January 26th.
    expect(price("security_deposit_insurance", "monthly", 200_000, LEASE, "2026-11-26")!.payments).toBe(3)
    expect(price("security_deposit_insurance", "monthly", 200_000, LEASE, "2027-01-31")!.payments).toBe(1)
    expect(price("security_deposit_insurance", "upfront", 200_000, LEASE, "2026-11-26")!.payments).toBe(1)
  })

  it("counts the months of coverage, a part month as one", () => {
    expect(coverageMonths("2026-02-01", "2027-01-31")).toBe(12)
    expect(coverageMonths("2026-02-15", "2027-02-14")).toBe(12)
    expect(coverageMonths("2026-02-15", "2027-02-15")).toBe(13)
    expect(coverageMonths("2026-02-01", "2026-02-01")).toBe(1)
  })

  it("states the savings of deposit insurance over the cash deposit in percent, one decimal", () => {
    expect(percentSavings(250_000, 10_000)).toBe(96)
    expect(percentSavings(300_000, 1_234)).toBe(99.6)
    expect(percentSavings(250_000, undefined)).toBeNull()
    expect(percentSavings(0, 5_000)).toBeNull()
    expect(percentSavings(1_000, 5_000)).toBe(0)
  })
})

describe("underwriting and eligibility: one rule table", () => {
  it("offers every product the prospect is eligible for, priced, and accepts each on the same answers", () => {
    const offers = offersFor(facts(), TODAY)
    expect(offers.map((o) => o.product)).toEqual([
      "security_deposit_insurance",
      "cash_deposit",
      "renter_guarantee_insurance",
    ])
    expect(offers[2]).toMatchObject({ productVersion: "2025.12.01", coverageAmountCents: 200_000 })
    for (const offer of offers) {
      for (const { cadence, premiumCents } of offer.cadences) {
        const decision = underwrite(offer.product, cadence, facts(), answers, TODAY)
        expect(decision, `${offer.product} ${cadence}`).toMatchObject({ accepted: true, premiumCents })
      }
    }
  })

  it("declines only on the renter's own answers, by the rules whose reasons eligibility gives", () => {
    const poorer = { ...answers, yearlyIncome: 40_000 }
    const declined = underwrite("security_deposit_insurance", "upfront", facts(), poorer, TODAY)
    expect(declined).toEqual({ accepted: false, rules: ["sdi_income_covers_rent"] })
    // The same data sent by the partner: eligibility gives that rule's reason, and nothing is offered for it.
    const sent = decideEligibility(ruleFacts(facts({ yearlyIncome: 40_000 }), TODAY))
    expect(sent.sdiIneligibilityReasons).toEqual(["Yearly income must be at least 24 times the monthly rent"])
    expect(sent.renterGuarantee?.reasons).toEqual([
      "Yearly income must be at least 40 times the monthly rent",
    ])
    expect(offersFor(facts({ yearlyIncome: 40_000 }), TODAY).map((o) => o.product)).toEqual(["cash_deposit"])

    const noSsn = underwrite(
      "renter_guarantee_insurance",
      "monthly",
      facts(),
      { ...answers, hasSsn: false },
      TODAY,
    )
    expect(noSsn).toEqual({ accepted: false, rules: ["social_security_number"] })
    expect(
      underwrite("cash_deposit", "upfront", facts(), { ...answers, yearlyIncome: 0 }, TODAY),
    ).toMatchObject({
      accepted: true,
    })
  })

  it("leaves a rule whose input the partner did not send to underwriting", () => {
    const unknownIncome = facts({ yearlyIncome: null })
    expect(decideEligibility(ruleFacts(unknownIncome, TODAY)).sdiIneligibilityReasons).toEqual([])
    expect(offersFor(unknownIncome, TODAY).map((o) => o.product)).toContain("security_deposit_insurance")
    expect(
      underwrite(
        "security_deposit_insurance",
        "upfront",
        unknownIncome,
        { ...answers, yearlyIncome: 1 },
        TODAY,
      ),
    ).toEqual({ accepted: false, rules: ["sdi_income_covers_rent"] })
  })

  it("refuses deposit insurance for a deposit over 3 months of rent", () => {
    const big = decideEligibility(ruleFacts(facts({ depositAmountCents: 600_001 }), TODAY))
    expect(big.sdiIneligibilityReasons).toEqual(["Deposit must be at most 3 times the monthly rent"])
    expect(big.cdIneligibilityReasons).toEqual([])
    expect(
      decideEligibility(ruleFacts(facts({ depositAmountCents: 600_000 }), TODAY)).sdiIneligibilityReasons,
    ).toEqual([])
  })

  it("offers the renter guarantee only where the partner asked for guarantor coverage", () => {
    expect(offersFor(facts({ guarantorCoverage: false }), TODAY).map((o) => o.product)).not.toContain(
      "renter_guarantee_insurance",
    )
    expect(
      underwrite(
        "renter_guarantee_insurance",
        "upfront",
        facts({ guarantorCoverage: false }),
        answers,
        TODAY,
      ),
    ).toMatchObject({ accepted: false })
  })
})

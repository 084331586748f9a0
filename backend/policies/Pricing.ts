import type { Cadence, ProductType } from "./Domain.ts"

/**
 * The pricing table: each insured product's premium is a rate of its coverage with a minimum, paid upfront or
 * month by month; a cash deposit costs exactly the deposit. Rates are in basis points (1/100 of a percent) so
 * every amount is an exact number of cents (rounded up).
 */
export interface PremiumRule {
  /** The whole premium, paid at once: this rate of the coverage ... */
  readonly upfrontRateBasisPoints: number
  /** ... and at least this much. */
  readonly upfrontMinimumCents: number
  /** One month's premium: this rate of the coverage ... */
  readonly monthlyRateBasisPoints: number
  /** ... and at least this much. */
  readonly monthlyMinimumCents: number
}

export const premiumRules = {
  /** 5% of the coverage upfront (at least $50), or 0.5% a month (at least $5). */
  security_deposit_insurance: {
    upfrontRateBasisPoints: 500,
    upfrontMinimumCents: 5_000,
    monthlyRateBasisPoints: 50,
    monthlyMinimumCents: 500,
  },
  /** 8% of the coverage upfront (at least $100), or 0.8% a month (at least $10). */
  renter_guarantee_insurance: {
    upfrontRateBasisPoints: 800,
    upfrontMinimumCents: 10_000,
    monthlyRateBasisPoints: 80,
    monthlyMinimumCents: 1_000,
  },
} as const satisfies Record<Exclude<ProductType, "cash_deposit">, PremiumRule>

const rate = (coverageCents: number, basisPoints: number) => Math.ceil((coverageCents * basisPoints) / 10_000)

/** Months of coverage from `start` to `end` (`YYYY-MM-DD`, both included), counting a part month as one. */
export const coverageMonths = (start: string, end: string) => {
  const [sy, sm, sd] = start.split("-").map(Number) as [number, number, number]
  const [ey, em, ed] = end.split("-").map(Number) as [number, number, number]
  return Math.max(1, (ey - sy) * 12 + (em - sm) + (ed >= sd ? 1 : 0))
}

/**
 * The day monthly premiums count from: the coverage start, or the day the policy was issued when its coverage
 * had already begun (premium n is due n - 1 months after it; nothing is charged for months before the sale).
 */
export const billingAnchor = (coverageStart: string, issuedOn: string) =>
  coverageStart > issuedOn ? coverageStart : issuedOn

export interface Price {
  readonly cadence: Cadence
  /** Per payment: the whole premium upfront, one month's on a monthly cadence, the deposit for a cash deposit. */
  readonly premiumCents: number
  /** How many payments: 1 upfront; monthly, the months of coverage from the billing anchor on. */
  readonly payments: number
}

/**
 * What `product` costs on `cadence` for `coverageCents` over the lease, bought on `today`; undefined when the
 * product is not paid that way (a cash deposit is paid upfront only). Bought after the lease began, a monthly
 * plan has a payment for each month still to come, not for the months before the sale.
 */
export const price = (
  product: ProductType,
  cadence: Cadence,
  coverageCents: number,
  lease: { readonly start: string; readonly end: string },
  today: string,
): Price | undefined => {
  if (product === "cash_deposit") {
    return cadence === "upfront" ? { cadence, premiumCents: coverageCents, payments: 1 } : undefined
  }
  const rule = premiumRules[product]
  return cadence === "upfront"
    ? {
        cadence,
        premiumCents: Math.max(rate(coverageCents, rule.upfrontRateBasisPoints), rule.upfrontMinimumCents),
        payments: 1,
      }
    : {
        cadence,
        premiumCents: Math.max(rate(coverageCents, rule.monthlyRateBasisPoints), rule.monthlyMinimumCents),
        payments: coverageMonths(billingAnchor(lease.start, today), lease.end),
      }
}

/** The cadences a product is paid on. */
export const cadencesOf = (product: ProductType): ReadonlyArray<Cadence> =>
  product === "cash_deposit" ? ["upfront"] : ["upfront", "monthly"]

/**
 * `percent_savings`: how much less than the cash deposit the upfront deposit insurance premium costs, in percent
 * with one decimal (0 when it costs as much or more); null without both.
 */
export const percentSavings = (depositCents: number, sdiUpfrontCents: number | undefined) =>
  sdiUpfrontCents === undefined || depositCents <= 0
    ? null
    : Math.max(0, Math.round(((depositCents - sdiUpfrontCents) / depositCents) * 1000) / 10)

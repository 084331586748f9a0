import type { EmploymentStatuses } from "../../prospects/Domain.ts"
import type { IssuerConfigShape } from "../../policies/Config.ts"
import type { ProductType } from "../../policies/Domain.ts"
import type { JourneyView } from "../Domain.ts"
import { html } from "../Html.ts"

/** How the renter's pages write amounts, dates, products and the quote, so every page says them alike. */

const money = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" })
export const dollars = (cents: number) => money.format(cents / 100).replace(/\.00$/, "")

const dateFormat = new Intl.DateTimeFormat("en-US", { dateStyle: "long", timeZone: "UTC" })
export const longDate = (isoDate: string) => {
  const date = new Date(`${isoDate}T00:00:00Z`)
  return Number.isNaN(date.getTime()) ? isoDate : dateFormat.format(date)
}

export const productNames: Record<ProductType, string> = {
  security_deposit_insurance: "Deposit insurance",
  cash_deposit: "Refundable cash deposit",
  renter_guarantee_insurance: "Renter guarantee",
}

/** A policy's product as the renter bought it (a cash deposit the service holds is `service_deposit`). */
export const productOfPolicy = (product: NonNullable<JourneyView["policy"]>["productType"]): ProductType =>
  product === "service_deposit" ? "cash_deposit" : product

/** What the coverage covers of the deposit, in the renter's words. */
export const coverageOfDeposit = (coverageCents: number, depositCents: number) =>
  coverageCents < depositCents
    ? `up to ${dollars(coverageCents)} of your ${dollars(depositCents)} deposit`
    : `up to ${dollars(coverageCents)}, your whole ${dollars(depositCents)} deposit`

/** Insurance is not a deposit: what the renter owes when the landlord claims. */
export const stillOwed = (issuer: IssuerConfigShape) =>
  html`If your landlord claims for damage or unpaid rent, ${issuer.insurerName} pays them and you must pay the
  insurer back. Insurance is not a deposit: the premium is not returned.`

export const employmentLabels: Record<(typeof EmploymentStatuses)[number], string> = {
  employed: "Employed",
  self_employed: "Self-employed",
  full_time_student: "Full-time student",
  retired: "Retired",
  unemployed: "Not working",
  corporation: "Renting as a company",
}

/** The price of one way to pay, with a monthly plan's total beside it. */
export const priceOf = (premiumCents: number, cadence: string, payments: number | undefined) =>
  cadence === "monthly"
    ? payments === undefined
      ? `${dollars(premiumCents)} a month`
      : `${dollars(premiumCents)} a month for ${payments} months (${dollars(premiumCents * payments)} in total)`
    : `${dollars(premiumCents)}, paid once`

/** The quote as the payment page and the confirmation list it. */
export const quoteRows = (
  view: JourneyView,
  quote: NonNullable<JourneyView["quote"]>,
  issuer: IssuerConfigShape,
) => [
  { key: "Product", value: productNames[quote.product] },
  quote.product === "cash_deposit"
    ? { key: "Held by", value: `${issuer.depositHolderName}, returned to you when the lease ends` }
    : { key: "Issued by", value: issuer.insurerName },
  ...(quote.product === "cash_deposit"
    ? [
        { key: "Lease", value: `${longDate(quote.coverageStartDate)} to ${longDate(quote.coverageEndDate)}` },
        { key: "Deposit", value: `${dollars(quote.premiumCents)}, paid once` },
      ]
    : [
        {
          key: "Covers",
          value: `Up to ${coverageOfDeposit(quote.coverageAmountCents, view.lease.depositAmountCents).slice("up to ".length)}`,
        },
        { key: "Dates", value: `${longDate(quote.coverageStartDate)} to ${longDate(quote.coverageEndDate)}` },
        { key: "Price", value: priceOf(quote.premiumCents, quote.cadence, quote.payments) },
      ]),
]

/** A US phone of 10 digits as people write it, `(555) 201-3344`; anything else as it is. */
export const formatPhone = (phone: string) => {
  const digits = phone.replace(/\D/g, "")
  return digits.length === 10 ? `(${digits.slice(0, 3)}) ${digits.slice(3, 6)}-${digits.slice(6)}` : phone
}

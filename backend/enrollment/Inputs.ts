import { textProblem } from "../contract/FieldLimits.ts"
import { EmploymentStatuses, MAX_AMOUNT } from "../prospects/Domain.ts"
import type { Cadence, ProductType } from "../policies/Domain.ts"
import type { Card } from "../policies/Payments.ts"
import type {
  ChoiceInput,
  DetailsInput,
  EmploymentStatus,
  Offer,
  PaymentInput,
  UnderwritingInput,
} from "./Domain.ts"

/**
 * The renter's forms, checked: each parser answers with the clean value or a message per field (keyed by the
 * form's field names), in GOV.UK's words: what to enter, not what went wrong.
 */
export type Parsed<A> = { readonly ok: A } | { readonly fields: Readonly<Record<string, string>> }

const isBlank = (value: string | undefined) => value === undefined || value.trim() === ""

/** The phone's example, in its hint and its errors alike. */
export const PHONE_EXAMPLE = "(555) 123-4567"

/** The phone field omitted keeps the one shown; sent empty, it was cleared, and a phone is needed. */
export const parseDetails = (input: DetailsInput): Parsed<{ readonly phone: string | null }> => {
  if (input.phone === undefined) return { ok: { phone: null } }
  if (isBlank(input.phone)) {
    return { fields: { phone: `Enter your phone number, 10 digits like ${PHONE_EXAMPLE}` } }
  }
  const phone = input.phone.replace(/[\s().-]/g, "")
  return /^\d{10}$/.test(phone)
    ? { ok: { phone } }
    : { fields: { phone: `Enter a phone number of exactly 10 digits, like ${PHONE_EXAMPLE}` } }
}

export interface Answers {
  readonly yearlyIncome: number
  readonly employmentStatus: EmploymentStatus
  readonly hasSsn: boolean
}

/** The income's example, in its hint and its error alike. */
export const INCOME_EXAMPLE = "45000"

export const parseUnderwriting = (input: UnderwritingInput): Parsed<Answers> => {
  const fields: Record<string, string> = {}
  const income = (input.yearlyIncome ?? "").replace(/[\s$,]/g, "")
  if (!/^\d{1,12}$/.test(income) || Number(income) > MAX_AMOUNT / 100) {
    fields.yearly_income = `Enter your yearly income in whole dollars, like ${INCOME_EXAMPLE}`
  }
  const employment = (EmploymentStatuses as ReadonlyArray<string>).includes(input.employmentStatus)
    ? (input.employmentStatus as EmploymentStatus)
    : undefined
  if (employment === undefined) fields.employment_status = "Select your employment status"
  const ssn =
    typeof input.hasSsn === "boolean"
      ? input.hasSsn
      : input.hasSsn === "yes"
        ? true
        : input.hasSsn === "no"
          ? false
          : undefined
  if (ssn === undefined) fields.has_ssn = "Select yes if you have a Social Security number"
  if (input.termsAccepted !== true) fields.terms_accepted = "Accept the terms to continue"
  return Object.keys(fields).length > 0
    ? { fields }
    : { ok: { yearlyIncome: Number(income), employmentStatus: employment!, hasSsn: ssn! } }
}

export const parseChoice = (
  input: ChoiceInput,
  offers: ReadonlyArray<Offer>,
): Parsed<{ readonly product: ProductType; readonly cadence: Cadence }> => {
  const offer = offers.find((o) => o.product === input.product)
  if (offer === undefined) return { fields: { product: "Select one of the products offered" } }
  const cadences = offer.cadences.map((c) => c.cadence)
  const cadence = isBlank(input.cadence) && cadences.length === 1 ? cadences[0]! : input.cadence
  const chosen = offer.cadences.find((c) => c.cadence === cadence)
  return chosen === undefined
    ? { fields: { cadence: "Select how you want to pay: upfront or monthly" } }
    : { ok: { product: offer.product, cadence: chosen.cadence } }
}

/** The Luhn check every card number passes. */
export const luhn = (digits: string) => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i])
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** The expiry's example, in its hint and its errors alike. */
export const EXPIRY_EXAMPLE = "08/29"

/**
 * An expiry as renters type it, `MM/YY`, `MMYY`, `MM / YY`, `M/YY` or `MM/YYYY` (a phone's numeric keypad has no
 * "/"): its month and four-digit year, or undefined.
 */
export const parseExpiry = (typed: string): { readonly month: number; readonly year: number } | undefined => {
  const text = typed.replace(/\s/g, "")
  const parts = /^(\d{1,2})\/(\d{2}|\d{4})$/.exec(text) ?? /^(\d{2})(\d{2}|\d{4})$/.exec(text)
  if (parts === null) return undefined
  const month = Number(parts[1])
  const year = parts[2]!.length === 2 ? 2000 + Number(parts[2]) : Number(parts[2])
  return month >= 1 && month <= 12 ? { month, year } : undefined
}

/** The card as typed; `today` (`YYYY-MM-DD`) decides whether the expiry month is still to come. */
export const parseCard = (input: PaymentInput, today: string): Parsed<Card> => {
  const fields: Record<string, string> = {}
  const number = (input.cardNumber ?? "").replace(/[\s-]/g, "")
  if (number === "") fields.card_number = "Enter your card number"
  else if (!/^\d+$/.test(number)) fields.card_number = "Enter the card number using digits only"
  else if (!/^\d{12,19}$/.test(number)) {
    fields.card_number = "Enter the card number as it is shown on your card, 12 to 19 digits"
  } else if (!luhn(number)) {
    // A typing mistake the card's check digit shows, before the provider is asked.
    fields.card_number = "This card number is not valid. Check it and enter it again"
  }
  const expiry = parseExpiry(input.expiry ?? "")
  if (isBlank(input.expiry)) fields.expiry = `Enter the expiry date on the card, like ${EXPIRY_EXAMPLE}`
  else if (expiry === undefined) {
    fields.expiry = `Enter the expiry date as a month and year, like ${EXPIRY_EXAMPLE}`
  } else if (
    `${String(expiry.year).padStart(4, "0")}-${String(expiry.month).padStart(2, "0")}` < today.slice(0, 7)
  ) {
    fields.expiry = "The card has expired: enter a card whose expiry date is in the future"
  }
  const cvc = (input.cvc ?? "").trim()
  if (!/^\d{3,4}$/.test(cvc)) fields.cvc = "Enter the security code, 3 or 4 digits"
  const name = (input.nameOnCard ?? "").trim()
  if (name === "" || textProblem("name", name) !== undefined)
    fields.name_on_card = "Enter the name on the card"
  const postal = (input.postalCode ?? "").trim()
  if (postal !== "" && !/^\d{5}(-\d{4})?$/.test(postal)) {
    fields.postal_code = "Enter a ZIP code of 5 digits, like 62701"
  }
  return Object.keys(fields).length > 0 || expiry === undefined
    ? { fields }
    : {
        ok: {
          number,
          expMonth: expiry.month,
          expYear: expiry.year,
          cvc,
          name,
          ...(postal === "" ? {} : { postalCode: postal }),
        },
      }
}

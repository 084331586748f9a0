import type { JourneyView } from "../Domain.ts"
import type { FieldError } from "../Layout.ts"

/** The field each error key of the journey belongs to, by the id of the input the summary links to. */
const fieldIds: Record<string, string> = {
  phone: "phone",
  yearly_income: "yearly-income",
  employment_status: "employment-status",
  has_ssn: "has-ssn",
  terms_accepted: "terms-accepted",
  product: "choice",
  cadence: "choice",
  card_number: "card-number",
  expiry: "expiry",
  cvc: "cvc",
  name_on_card: "name-on-card",
  postal_code: "postal-code",
}

/** The order fields appear in on the pages, so the error summary lists them in the same order. */
const fieldOrder = Object.keys(fieldIds)

export const errorsOf = (view: JourneyView): ReadonlyArray<FieldError> => {
  const error = view.error
  if (error === undefined) return []
  if (error.kind === "payment_declined") {
    return [
      {
        field: "card-number",
        message: `${error.message} You have not been charged. Check the card's details, or pay with another card.`,
      },
    ]
  }
  // `product` and `cadence` are one radio group: its first message is the one shown.
  const byField = new Map<string, string>()
  for (const [key, message] of Object.entries(error.fields).sort(
    ([a], [b]) => fieldOrder.indexOf(a) - fieldOrder.indexOf(b),
  )) {
    const field = fieldIds[key] ?? key
    if (!byField.has(field)) byField.set(field, message)
  }
  return [...byField].map(([field, message]) => ({ field, message }))
}

export const messageFor = (errors: ReadonlyArray<FieldError>, id: string) =>
  errors.find((error) => error.field === id)?.message

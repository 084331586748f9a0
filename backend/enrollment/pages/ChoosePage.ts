import type { JourneyView, Offer } from "../Domain.ts"
import { html } from "../Html.ts"
import { button, type Choice, type FieldError, form, newTabLink, radios } from "../Layout.ts"
import { termsPath } from "../Terms.ts"
import { messageFor } from "./FieldErrors.ts"
import { backLink, journeyPageOf, type PageContext } from "./PageContext.ts"
import { coverageOfDeposit, dollars, priceOf, productNames, stillOwed } from "./Wording.ts"

/** One radio per product and cadence, valued `<product>:<cadence>`. */
const offerChoices = (offers: ReadonlyArray<Offer>, depositCents: number): ReadonlyArray<Choice> =>
  offers.flatMap((offer) =>
    offer.cadences.map((option): Choice => {
      const value = `${offer.product}:${option.cadence}`
      if (offer.product === "cash_deposit") {
        return {
          value,
          label: "Pay a refundable cash deposit",
          hint: `${dollars(option.premiumCents)}, paid now. Not insurance: it is returned to you when the lease ends, less what your landlord claims.`,
        }
      }
      const name = productNames[offer.product]
      const covers = coverageOfDeposit(offer.coverageAmountCents, depositCents)
      return {
        value,
        label: option.cadence === "monthly" ? `${name}, paid monthly` : `${name}, paid once`,
        hint: `${priceOf(option.premiumCents, option.cadence, option.payments)}. Covers ${covers}.`,
      }
    }),
  )

/** `<product>:<cadence>` as the choice form sends it. */
export const parseChoice = (value: string | null): { product: string; cadence: string | undefined } => {
  const [product = "", cadence] = (value ?? "").split(":", 2)
  return { product, cadence: cadence === "" ? undefined : cadence }
}

/**
 * Why underwriting refused a product the page had offered, in the renter's words: only rules the renter's answers
 * could not show get here (the prospect, the home or the lease changed since they answered).
 */
const refusalReasons: Record<string, string> = {
  property_present: "we no longer have the details of the home you are renting",
  property_on_roster: "the home you are renting is no longer covered by this service",
  unit_present: "we no longer have the details of the home you are renting",
  owner_active: "your landlord is not taking new protections at the moment",
  lease_dates_in_order: "the dates of your lease have changed",
  lease_not_ended: "your lease has ended",
  monthly_rent_present: "your rent has changed",
  coverage_above_zero: "it would cover nothing for this home",
  screening_not_denied: "the result of your rental screening does not allow it",
  deposit_within_limit: "your deposit is now more than it can cover",
  sdi_income_covers_rent: "your rent has changed and your income no longer meets its limit",
  income_covers_rent: "your rent has changed and your income no longer meets its limit",
  deposit_present: "your deposit has changed",
  renter_guarantee_offered: "it is no longer offered for this home",
  renter_of_age: "it is only for renters aged 18 or over",
  social_security_number: "it needs a Social Security number",
}

const refusalNotice = (refused: NonNullable<JourneyView["refused"]>) => {
  const name = productNames[refused.product].toLowerCase()
  const reasons = [...new Set(refused.rules.map((rule) => refusalReasons[rule]))]
  const because = reasons.includes(undefined) || reasons.length === 0 ? undefined : reasons.join(", and ")
  return html`<div class="inset" id="refused">
    <p><strong>We cannot offer you ${name} after all.</strong></p>
    <p>
      ${
        because === undefined
          ? "Something about your lease or your home changed since you answered, so it no longer qualifies."
          : `This is because ${because}.`
      }
      You have not been charged. You can choose one of the other options below.
    </p>
  </div>`
}

/**
 * Why a product is not offered, in the renter's words and without the rule's numbers (the underwriting table is
 * not published on the page): one phrase per rule of `backend/prospects/Eligibility.ts`.
 */
const notOfferedReasons: Record<string, string> = {
  property_present: "we do not have the details of the home you are renting",
  property_on_roster: "the home you are renting is not covered by this service",
  unit_present: "we do not have the details of the home you are renting",
  owner_active: "your landlord is not taking new protections at the moment",
  lease_dates_in_order: "the dates of your lease are not complete",
  lease_not_ended: "your lease has ended",
  monthly_rent_present: "we do not have the rent of your home",
  coverage_above_zero: "it would cover nothing for this home",
  screening_not_denied: "the result of your rental screening does not allow it",
  deposit_within_limit: "your deposit is more than it can cover for this rent",
  sdi_income_covers_rent: "your yearly income is below what it needs for the rent of this home",
  income_covers_rent: "your yearly income is below what it needs for the rent of this home",
  deposit_present: "there is no deposit to pay for this home",
  renter_guarantee_offered: "it is not offered for this home",
  renter_of_age: "it is only for renters aged 18 or over",
  social_security_number: "it needs a Social Security number",
}

const whyNotOffered = (rules: ReadonlyArray<string>) => {
  const reasons = [...new Set(rules.map((rule) => notOfferedReasons[rule]))]
  return reasons.length === 0 || reasons.includes(undefined)
    ? "it does not fit your lease or your home. Contact us if you want to know more"
    : reasons.join(", and ")
}

/** Each product the renter is not offered, and why: a product never just disappears. */
const notOfferedNotice = (view: JourneyView) => {
  const missing = (view.notOffered ?? []).filter((entry) => entry.product !== view.refused?.product)
  return missing.length === 0
    ? undefined
    : html`<div class="inset" id="not-offered">
        <h2>Not offered to you</h2>
        <ul class="list">
          ${missing.map(
            (entry) =>
              html`<li>
                <strong>${productNames[entry.product]}</strong>: ${capitalised(whyNotOffered(entry.rules))}.
              </li>`,
          )}
        </ul>
      </div>`
}

const capitalised = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

export const choosePage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
  const sent = context.submitted?.get("choice")
  const current = view.quote ? `${view.quote.product}:${view.quote.cadence}` : undefined
  const preselected = view.preselected ? `${view.preselected.product}:${view.preselected.cadence}` : undefined
  const insurance = view.offers.filter((offer) => offer.product !== "cash_deposit")
  return journeyPageOf(context, "choose", {
    title: "How do you want to protect your deposit?",
    errors,
    body: html`${backLink(context)}
    ${view.refused === undefined ? undefined : refusalNotice(view.refused)}${form({
      token: context.formToken,
      step: "choose",
      body: [
        radios({
          id: "choice",
          name: "choice",
          legend: "How do you want to protect your deposit?",
          legendIsHeading: true,
          hint: `Your security deposit is ${dollars(view.lease.depositAmountCents)}.`,
          choices: offerChoices(view.offers, view.lease.depositAmountCents),
          checked: sent ?? current ?? preselected,
          error: messageFor(errors, "choice"),
        }),
        insurance.length === 0
          ? undefined
          : html`<div class="inset">
              <p>
                ${insurance.map((offer) => productNames[offer.product]).join(" and ")}
                ${insurance.length === 1 ? "is" : "are"} insurance issued by ${context.issuer.insurerName}.
                ${stillOwed(context.issuer)}
              </p>
              <p>
                ${insurance.map((offer, index) => [
                  index === 0 ? undefined : " ",
                  newTabLink(
                    termsPath(offer.product, offer.productVersion),
                    `${productNames[offer.product]}: terms`,
                  ),
                ])}
              </p>
            </div>`,
        notOfferedNotice(view),
        button("Continue"),
      ],
    })}`,
  })
}

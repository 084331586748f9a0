import type { IssuerConfigShape } from "../../policies/Config.ts"
import type { JourneyView } from "../Domain.ts"
import { html } from "../Html.ts"
import { EXPIRY_EXAMPLE } from "../Inputs.ts"
import { button, type FieldError, form, newTabLink, summaryList, textInput } from "../Layout.ts"
import { termsPath } from "../Terms.ts"
import { messageFor } from "./FieldErrors.ts"
import { backLink, journeyPageOf, type PageContext } from "./PageContext.ts"
import { dollars, productNames, quoteRows, stillOwed } from "./Wording.ts"

/** The terms the renter agrees to by paying: the chosen product's, at its version. */
const agreement = (quote: NonNullable<JourneyView["quote"]>, issuer: IssuerConfigShape) =>
  html`<p>
    By paying you agree to the
    ${newTabLink(termsPath(quote.product, quote.productVersion), `terms of ${productNames[quote.product]}`)}.
    ${quote.product === "cash_deposit" ? undefined : stillOwed(issuer)}
  </p>`

export const payPage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
  const quote = view.quote!
  const sent = context.submitted
  const due = dollars(quote.dueNowCents)
  const cards = context.testCards
  const title =
    quote.product === "cash_deposit"
      ? "Pay your refundable cash deposit"
      : `Pay for your ${productNames[quote.product].toLowerCase()}`
  return journeyPageOf(context, "quote", {
    title,
    errors,
    body: html`${backLink(context)}
      <h1>${title}</h1>
      ${summaryList(quoteRows(view, quote, context.issuer))}
      <p><a href="${context.pagePath("choose", "check")}">Choose a different option</a></p>
      <h2>Pay ${due} now</h2>
      ${agreement(quote, context.issuer)}
      ${
        cards.length === 0
          ? undefined
          : html`<div class="inset">
              <p>
                This is a test environment: no real card is charged. Use one of these card numbers with any
                future expiry date and any 3-digit security code.
              </p>
              ${summaryList(cards.map((card) => ({ key: card.number, value: card.outcome })))}
            </div>`
      }
      ${form({
        token: context.formToken,
        step: "quote",
        body: [
          textInput({
            id: "card-number",
            name: "card_number",
            label: "Card number",
            inputmode: "numeric",
            autocomplete: "cc-number",
            spellcheck: false,
            value: sent?.get("card_number") ?? "",
            error: messageFor(errors, "card-number"),
          }),
          textInput({
            id: "expiry",
            name: "expiry",
            label: "Expiry date",
            hint: `Month and year, for example ${EXPIRY_EXAMPLE}`,
            inputmode: "numeric",
            autocomplete: "cc-exp",
            short: true,
            spellcheck: false,
            value: sent?.get("expiry") ?? "",
            error: messageFor(errors, "expiry"),
          }),
          textInput({
            id: "cvc",
            name: "cvc",
            label: "Security code",
            hint: "3 or 4 digits, on the back of the card (on the front of an American Express card)",
            inputmode: "numeric",
            autocomplete: "cc-csc",
            short: true,
            spellcheck: false,
            value: "",
            error: messageFor(errors, "cvc"),
          }),
          textInput({
            id: "name-on-card",
            name: "name_on_card",
            label: "Name on card",
            autocomplete: "cc-name",
            spellcheck: false,
            value: sent?.get("name_on_card") ?? `${view.renter.firstName} ${view.renter.lastName}`,
            error: messageFor(errors, "name-on-card"),
          }),
          textInput({
            id: "postal-code",
            name: "postal_code",
            label: "Billing ZIP code (optional)",
            hint: "5 digits, like 62701",
            inputmode: "numeric",
            autocomplete: "postal-code",
            short: true,
            value: sent?.get("postal_code") ?? "",
            error: messageFor(errors, "postal-code"),
          }),
          button(`Pay ${due}`),
        ],
      })}`,
  })
}

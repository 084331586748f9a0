import type { JourneyView } from "../Domain.ts"
import { html, type SafeHtml } from "../Html.ts"
import { PHONE_EXAMPLE } from "../Inputs.ts"
import { button, emailText, type FieldError, form, summaryList, textInput } from "../Layout.ts"
import { messageFor } from "./FieldErrors.ts"
import { journeyPageOf, type PageContext } from "./PageContext.ts"
import { dollars, formatPhone, longDate } from "./Wording.ts"

const addressOf = (view: JourneyView): SafeHtml => {
  const { address, buildingName, unitName } = view.lease
  return html`${buildingName}, unit ${unitName}<br />${address.lineOne}<br />${address.city}, ${address.state}
    ${address.zip}`
}

export const detailsPage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) =>
  journeyPageOf(context, "details", {
    title: "Check your details",
    errors,
    body: html`<h1>Check your details</h1>
      <p>
        ${view.owner.name} sent these details. If something other than your phone number is wrong, contact
        them before you continue.
      </p>
      ${summaryList([
        { key: "Name", value: `${view.renter.firstName} ${view.renter.lastName}` },
        { key: "Email", value: emailText(view.renter.email) },
        { key: "Date of birth", value: longDate(view.renter.birthdate) },
        { key: "Home you are renting", value: addressOf(view) },
        {
          key: "Lease",
          value: `${longDate(view.lease.startDate)} to ${longDate(view.lease.endDate)}`,
        },
        { key: "Monthly rent", value: dollars(view.lease.monthlyRentCents) },
        { key: "Security deposit", value: dollars(view.lease.depositAmountCents) },
      ])}
      ${form({
        token: context.formToken,
        step: "details",
        body: [
          textInput({
            id: "phone",
            name: "phone",
            label: "Phone number",
            hint: `10 digits without the country code, like ${PHONE_EXAMPLE}. Change it if it is wrong.`,
            type: "tel",
            autocomplete: "tel-national",
            value: context.submitted?.get("phone") ?? formatPhone(view.renter.phone),
            error: messageFor(errors, "phone"),
          }),
          button("Confirm and continue"),
        ],
      })}`,
  })

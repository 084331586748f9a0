import type { JourneyView } from "../Domain.ts"
import { html } from "../Html.ts"
import { INCOME_EXAMPLE } from "../Inputs.ts"
import {
  button,
  checkbox,
  type FieldError,
  form,
  newTabLink,
  PRIVACY_PATH,
  radios,
  TERMS_PATH,
  textInput,
} from "../Layout.ts"
import { messageFor } from "./FieldErrors.ts"
import { backLink, journeyPageOf, type PageContext } from "./PageContext.ts"
import { employmentLabels } from "./Wording.ts"

const yesNo = (value: boolean | null) => (value === null ? undefined : value ? "yes" : "no")

export const incomePage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
  const sent = context.submitted
  return journeyPageOf(context, "underwriting", {
    title: "Your income and employment",
    errors,
    body: html`${backLink(context)}
      <h1>Your income and employment</h1>
      <p>We use these answers to decide which ways of protecting your deposit we can offer you.</p>
      ${form({
        token: context.formToken,
        step: "underwriting",
        body: [
          textInput({
            id: "yearly-income",
            name: "yearly_income",
            label: "What is your yearly income before tax?",
            hint: `In whole dollars, for example ${INCOME_EXAMPLE}.`,
            prefix: "$",
            inputmode: "numeric",
            spellcheck: false,
            value: sent?.get("yearly_income") ?? view.answers.yearlyIncome?.toString() ?? "",
            error: messageFor(errors, "yearly-income"),
          }),
          radios({
            id: "employment-status",
            name: "employment_status",
            legend: "What is your employment status?",
            choices: Object.entries(employmentLabels).map(([value, label]) => ({ value, label })),
            checked: sent?.get("employment_status") ?? view.answers.employmentStatus ?? undefined,
            error: messageFor(errors, "employment-status"),
          }),
          radios({
            id: "has-ssn",
            name: "has_ssn",
            legend: "Do you have a Social Security number?",
            choices: [
              { value: "yes", label: "Yes" },
              { value: "no", label: "No" },
            ],
            checked: sent?.get("has_ssn") ?? yesNo(view.answers.hasSsn),
            error: messageFor(errors, "has-ssn"),
          }),
          html`<p>
            Read the ${newTabLink(TERMS_PATH, "terms of each product")} and the
            ${newTabLink(PRIVACY_PATH, "privacy notice")}.
          </p>`,
          checkbox({
            id: "terms-accepted",
            name: "terms_accepted",
            label: "I agree to the terms of the deposit protection and confirm my answers are true.",
            checked: sent === undefined ? view.answers.termsAccepted : sent.get("terms_accepted") === "yes",
            error: messageFor(errors, "terms-accepted"),
          }),
          button("Continue"),
        ],
      })}`,
  })
}

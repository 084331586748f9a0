import type { JourneyView } from "../Domain.ts"
import { html, type SafeHtml } from "../Html.ts"
import { summaryList } from "../Layout.ts"
import type { StepPage } from "../StepPages.ts"
import { backLink, journeyPageOf, type PageContext } from "./PageContext.ts"
import { dollars, employmentLabels, formatPhone, longDate, productNames } from "./Wording.ts"

/** A summary row with GOV.UK's Change link, which names what it changes for screen readers. */
interface AnswerRow {
  readonly key: string
  readonly value: string | SafeHtml
  readonly change: string
  readonly href: string
}

const answerList = (id: string, rows: ReadonlyArray<AnswerRow>) =>
  html`<dl class="summary-list" id="${id}">
    ${rows.map(
      (row) =>
        html`<div class="summary-list__row">
          <dt class="summary-list__key">${row.key}</dt>
          <dd class="summary-list__value">${row.value}</dd>
          <dd class="summary-list__actions">
            <a href="${row.href}">Change<span class="visually-hidden"> ${row.change}</span></a>
          </dd>
        </div>`,
    )}
  </dl>`

/**
 * Every answer before paying (GOV.UK's "check your answers"): each one's Change link opens its page, whose form
 * leads back here; new income or employment answers lead to the choice instead, as the offers follow them.
 */
export const checkPage = (view: JourneyView, context: PageContext) => {
  const quote = view.quote!
  const change = (page: StepPage) => context.pagePath(page, "check")
  const { yearlyIncome, employmentStatus, hasSsn } = view.answers
  const price =
    quote.cadence === "monthly"
      ? `Monthly: ${dollars(quote.premiumCents)} a month, ${quote.payments} payments`
      : `Upfront: ${dollars(quote.premiumCents)}, paid once`
  return journeyPageOf(context, "quote", {
    title: "Check your answers before paying",
    body: html`${backLink(context)}
      <h1>Check your answers before paying</h1>
      <h2>Your details</h2>
      ${answerList("answers-details", [
        {
          key: "Phone number",
          value: formatPhone(view.renter.phone),
          change: "phone number",
          href: change("details"),
        },
      ])}
      <h2>Your income and employment</h2>
      ${answerList("answers-income", [
        {
          key: "Yearly income before tax",
          value: yearlyIncome === null ? "" : dollars(yearlyIncome * 100),
          change: "yearly income",
          href: change("income"),
        },
        {
          key: "Employment status",
          value: employmentStatus === null ? "" : employmentLabels[employmentStatus],
          change: "employment status",
          href: change("income"),
        },
        {
          key: "Social Security number",
          value: hasSsn === true ? "I have one" : "I do not have one",
          change: "whether you have a Social Security number",
          href: change("income"),
        },
      ])}
      <h2>Your deposit protection</h2>
      ${answerList("answers-protection", [
        { key: "Product", value: productNames[quote.product], change: "product", href: change("choose") },
        { key: "Payment plan", value: price, change: "payment plan", href: change("choose") },
      ])}
      ${summaryList([
        { key: "Covers up to", value: dollars(quote.coverageAmountCents) },
        { key: "Cover", value: `${longDate(quote.coverageStartDate)} to ${longDate(quote.coverageEndDate)}` },
      ])}
      <p><a class="button" href="${context.pagePath("pay")}">Continue to payment</a></p>`,
  })
}

import type { EmploymentStatuses } from "../prospects/Domain.ts"
import type { ProductType } from "../policies/Domain.ts"
import type { JourneyStep, JourneyView, Offer } from "./Domain.ts"
import { html, type SafeHtml } from "./Html.ts"
import {
  button,
  checkbox,
  type Choice,
  type FieldError,
  form,
  page,
  radios,
  summaryList,
  textInput,
} from "./Layout.ts"

/** What a page needs besides the journey: where its forms come back to and what it may show. */
export interface PageContext {
  /** The link's own path and query. */
  readonly linkPath: string
  readonly formToken: string
  /** The HTTPS origins that may receive the terminal page's message (embedded flow only). */
  readonly parentOrigins: ReadonlyArray<string>
  /** Where "continue" leads at the end of an expedited flow, when the partner's `redirect_url` is allowed. */
  readonly continueUrl: string | undefined
  /** Test cards to show on the payment form (development and staging only). */
  readonly testCards: ReadonlyArray<{ readonly number: string; readonly outcome: string }>
  /** The renter asked to choose another product on the quote step. */
  readonly changingChoice: boolean
  /** What the renter just sent, shown again beside the errors. */
  readonly submitted: URLSearchParams | undefined
}

const money = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" })
const dollars = (cents: number) => money.format(cents / 100).replace(/\.00$/, "")

const dateFormat = new Intl.DateTimeFormat("en-US", { dateStyle: "long", timeZone: "UTC" })
const longDate = (isoDate: string) => {
  const date = new Date(`${isoDate}T00:00:00Z`)
  return Number.isNaN(date.getTime()) ? isoDate : dateFormat.format(date)
}

const productNames: Record<ProductType, string> = {
  security_deposit_insurance: "Deposit insurance",
  cash_deposit: "Cash deposit",
  renter_guarantee_insurance: "Renter guarantee",
}

const employmentLabels: Record<(typeof EmploymentStatuses)[number], string> = {
  employed: "Employed",
  self_employed: "Self-employed",
  full_time_student: "Full-time student",
  retired: "Retired",
  unemployed: "Not working",
  corporation: "Renting as a company",
}

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

const errorsOf = (view: JourneyView): ReadonlyArray<FieldError> => {
  const error = view.error
  if (error === undefined) return []
  if (error.kind === "payment_declined") return [{ field: "card-number", message: error.message }]
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

const messageFor = (errors: ReadonlyArray<FieldError>, id: string) =>
  errors.find((error) => error.field === id)?.message

const addressOf = (view: JourneyView): SafeHtml => {
  const { address, buildingName, unitName } = view.lease
  return html`${buildingName}, unit ${unitName}<br />${address.lineOne}<br />${address.city}, ${address.state}
    ${address.zip}`
}

const detailsPage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) =>
  page({
    title: "Check your details",
    errors,
    body: html`<h1>Check your details</h1>
      <p>
        ${view.owner.name} sent these details. If something other than your phone number is wrong, contact
        them before you continue.
      </p>
      ${summaryList([
        { key: "Name", value: `${view.renter.firstName} ${view.renter.lastName}` },
        { key: "Email", value: view.renter.email },
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
            hint: "10 digits, without the country code. Change it if it is wrong.",
            type: "tel",
            autocomplete: "tel-national",
            value: context.submitted?.get("phone") ?? view.renter.phone,
            error: messageFor(errors, "phone"),
          }),
          button("Confirm and continue"),
        ],
      })}`,
  })

const yesNo = (value: boolean | null) => (value === null ? undefined : value ? "yes" : "no")

const underwritingPage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
  const sent = context.submitted
  return page({
    title: "Your income and employment",
    errors,
    body: html`<h1>Your income and employment</h1>
      <p>We use these answers to decide which ways of protecting your deposit we can offer you.</p>
      ${form({
        token: context.formToken,
        step: "underwriting",
        body: [
          textInput({
            id: "yearly-income",
            name: "yearly_income",
            label: "What is your yearly income before tax?",
            hint: "In whole dollars, for example 45000.",
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

/** One radio per product and cadence, valued `<product>:<cadence>`. */
const offerChoices = (offers: ReadonlyArray<Offer>): ReadonlyArray<Choice> =>
  offers.flatMap((offer) =>
    offer.cadences.map((option): Choice => {
      const value = `${offer.product}:${option.cadence}`
      const coverage = dollars(offer.coverageAmountCents)
      if (offer.product === "cash_deposit") {
        return { value, label: "Pay a cash deposit", hint: `${dollars(option.premiumCents)}, paid now.` }
      }
      const name = productNames[offer.product]
      return option.cadence === "monthly"
        ? {
            value,
            label: `${name}, paid monthly`,
            hint: `${dollars(option.premiumCents)} a month. Covers up to ${coverage}.`,
          }
        : {
            value,
            label: `${name}, paid once`,
            hint: `${dollars(option.premiumCents)}, paid now. Covers up to ${coverage}.`,
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

const choosePage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
  const sent = context.submitted?.get("choice")
  const current = view.quote ? `${view.quote.product}:${view.quote.cadence}` : undefined
  const preselected = view.preselected ? `${view.preselected.product}:${view.preselected.cadence}` : undefined
  return page({
    title: "How do you want to protect your deposit?",
    errors,
    body: html`${view.refused === undefined ? undefined : refusalNotice(view.refused)}${form({
      token: context.formToken,
      step: "choose",
      body: [
        radios({
          id: "choice",
          name: "choice",
          legend: "How do you want to protect your deposit?",
          legendIsHeading: true,
          hint: `Your security deposit is ${dollars(view.lease.depositAmountCents)}.`,
          choices: offerChoices(view.offers),
          checked: sent ?? current ?? preselected,
          error: messageFor(errors, "choice"),
        }),
        button("Continue"),
      ],
    })}`,
  })
}

const quoteRows = (quote: NonNullable<JourneyView["quote"]>) => [
  { key: "Product", value: productNames[quote.product] },
  { key: "Covers up to", value: dollars(quote.coverageAmountCents) },
  { key: "Cover", value: `${longDate(quote.coverageStartDate)} to ${longDate(quote.coverageEndDate)}` },
  {
    key: "Price",
    value:
      quote.cadence === "monthly"
        ? `${dollars(quote.premiumCents)} a month, ${quote.payments} payments`
        : `${dollars(quote.premiumCents)}, paid once`,
  },
]

const quotePage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
  const quote = view.quote!
  const sent = context.submitted
  const due = dollars(quote.dueNowCents)
  const cards = context.testCards
  return page({
    title: "Your quote",
    errors,
    body: html`<h1>Your quote</h1>
      ${summaryList(quoteRows(quote))}
      <p><a href="${context.linkPath}&amp;change=choice">Choose a different option</a></p>
      <h2>Pay ${due} now</h2>
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
            hint: "For example, 08/29",
            inputmode: "numeric",
            autocomplete: "cc-exp",
            short: true,
            value: sent?.get("expiry") ?? "",
            error: messageFor(errors, "expiry"),
          }),
          textInput({
            id: "cvc",
            name: "cvc",
            label: "Security code",
            hint: "The last 3 digits on the back of the card",
            inputmode: "numeric",
            autocomplete: "cc-csc",
            short: true,
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
            label: "Billing ZIP code",
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

/** The element the script reads on a terminal page: the outcome and who may be told it. */
const outcomeOf = (step: JourneyStep, context: PageContext) =>
  html`<div hidden data-outcome="${step}" data-parent-origins="${context.parentOrigins.join(" ")}"></div>`

const continueLink = (context: PageContext) =>
  context.continueUrl === undefined
    ? undefined
    : html`<p>
        <a class="button" href="${context.continueUrl}">Continue to ${new URL(context.continueUrl).host}</a>
      </p>`

const completedPage = (view: JourneyView, context: PageContext) => {
  const policy = view.policy
  if (policy === undefined) {
    return page({
      title: "Your deposit is protected",
      body: html`<h1>Your deposit is protected</h1>
        ${outcomeOf("completed", context)}
        <p>Your policy is being issued. Reload this page in a minute to see its number and documents.</p>
        ${continueLink(context)}`,
    })
  }
  return page({
    title: "Your deposit is protected",
    body: html`<div class="panel">
        <h1>Your deposit is protected</h1>
        <div class="panel__body">Your policy number<br /><strong>${policy.policyNumber}</strong></div>
      </div>
      ${outcomeOf("completed", context)}
      ${summaryList([
        ...(view.quote ? quoteRows(view.quote) : []),
        { key: "Paid", value: `${dollars(policy.paidCents)} with the card ending ${policy.cardLast4}` },
      ])}
      ${
        policy.documentsUrl === undefined
          ? html`<p>
              Your policy documents are being prepared. Reload this page in a minute to download them.
            </p>`
          : html`<p>
              <a href="${policy.documentsUrl}" download>Download your policy documents (ZIP file)</a>
            </p>`
      }
      ${continueLink(context)}`,
  })
}

const declinedPage = (view: JourneyView, context: PageContext) =>
  page({
    title: "We cannot offer this protection",
    body: html`<h1>We cannot offer this protection</h1>
      ${outcomeOf("declined", context)}
      <p>
        None of the ways of protecting your deposit online can be offered to you, so you have not been
        charged.
      </p>
      <p>Contact ${view.owner.name} to agree another way to pay your security deposit.</p>
      ${continueLink(context)}`,
  })

const blockedPage = (view: JourneyView, context: PageContext) =>
  page({
    title: "You cannot continue online",
    body: html`<h1>You cannot continue online</h1>
      ${outcomeOf("blocked", context)}
      <p>We cannot offer you deposit protection for this home online. You have not been charged.</p>
      <p>Contact ${view.owner.name} for help.</p>
      ${continueLink(context)}`,
  })

/** The page of the step the renter is on, with the errors of what they just sent. */
export const journeyPage = (view: JourneyView, context: PageContext): string => {
  const errors = errorsOf(view)
  switch (view.step) {
    case "details":
      return detailsPage(view, context, errors)
    case "underwriting":
      return underwritingPage(view, context, errors)
    case "choose":
      return choosePage(view, context, errors)
    case "quote":
      return context.changingChoice ? choosePage(view, context, errors) : quotePage(view, context, errors)
    case "completed":
      return completedPage(view, context)
    case "declined":
      return declinedPage(view, context)
    case "blocked":
      return blockedPage(view, context)
  }
}

import type { EmploymentStatuses } from "../prospects/Domain.ts"
import type { IssuerConfigShape } from "../policies/Config.ts"
import { documentFileNames, type ProductType } from "../policies/Domain.ts"
import type { JourneyStep, JourneyView, Offer } from "./Domain.ts"
import { html, type SafeHtml } from "./Html.ts"
import { EXPIRY_EXAMPLE, INCOME_EXAMPLE, PHONE_EXAMPLE } from "./Inputs.ts"
import { previousPage, type StepPage } from "./StepPages.ts"
import {
  button,
  checkbox,
  type Choice,
  type FieldError,
  form,
  newTabLink,
  page,
  type PageContent,
  PRIVACY_PATH,
  radios,
  SERVICE_NAME,
  summaryList,
  TERMS_PATH,
  textInput,
} from "./Layout.ts"
import { termsPath } from "./Terms.ts"

/** What a page needs besides the journey: where its forms come back to and what it may show. */
export interface PageContext {
  /** The link's own path and query. */
  readonly linkPath: string
  readonly formToken: string
  /** The HTTPS origins that may receive the page's height and terminal message (embedded flow only). */
  readonly parentOrigins: ReadonlyArray<string>
  /** Where "continue" leads at the end of an expedited flow, when the partner's `redirect_url` is allowed. */
  readonly continueUrl: string | undefined
  /** Test cards to show on the payment form (development and staging only). */
  readonly testCards: ReadonlyArray<{ readonly number: string; readonly outcome: string }>
  /** The page shown. */
  readonly page: StepPage
  /** The address of another page of the link; `returnTo` is where its form then leads back. */
  readonly pagePath: (page: StepPage, returnTo?: StepPage) => string
  /** The page the renter came from to change an answer, where Back and the form lead back to. */
  readonly returnTo: StepPage | undefined
  /** What the renter just sent, shown again beside the errors. */
  readonly submitted: URLSearchParams | undefined
  /** The insurer and the contact the pages name. */
  readonly issuer: IssuerConfigShape
}

/** The steps before the policy, numbered for the renter ("Step 2 of 4"). */
const STEP_NUMBERS: Partial<Record<JourneyStep, number>> = {
  details: 1,
  underwriting: 2,
  choose: 3,
  quote: 4,
}
const STEP_COUNT = 4

/** A journey page: the issuer's footer, and the step's number while there are steps to go. */
const journeyPageOf = (
  context: PageContext,
  step: JourneyStep,
  content: Omit<PageContent, "issuer" | "progress">,
) => {
  const number = STEP_NUMBERS[step]
  return page({
    ...content,
    issuer: context.issuer,
    parentOrigins: context.parentOrigins,
    ...(number === undefined ? {} : { progress: { step: number, of: STEP_COUNT } }),
  })
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
  cash_deposit: "Refundable cash deposit",
  renter_guarantee_insurance: "Renter guarantee",
}

/** A policy's product as the renter bought it (a cash deposit the service holds is `service_deposit`). */
const productOfPolicy = (product: NonNullable<JourneyView["policy"]>["productType"]): ProductType =>
  product === "service_deposit" ? "cash_deposit" : product

/** What the coverage covers of the deposit, in the renter's words. */
const coverageOfDeposit = (coverageCents: number, depositCents: number) =>
  coverageCents < depositCents
    ? `up to ${dollars(coverageCents)} of your ${dollars(depositCents)} deposit`
    : `up to ${dollars(coverageCents)}, your whole ${dollars(depositCents)} deposit`

/** Insurance is not a deposit: what the renter owes when the landlord claims. */
const stillOwed = (issuer: IssuerConfigShape) =>
  html`If your landlord claims for damage or unpaid rent, ${issuer.insurerName} pays them and you must pay the
  insurer back. Insurance is not a deposit: the premium is not returned.`

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

const messageFor = (errors: ReadonlyArray<FieldError>, id: string) =>
  errors.find((error) => error.field === id)?.message

const addressOf = (view: JourneyView): SafeHtml => {
  const { address, buildingName, unitName } = view.lease
  return html`${buildingName}, unit ${unitName}<br />${address.lineOne}<br />${address.city}, ${address.state}
    ${address.zip}`
}

/** GOV.UK's Back link: to the page before this one, or to the check of the answers the renter came from. */
const backLink = (context: PageContext) => {
  const previous = context.returnTo ?? previousPage(context.page)
  return previous === undefined
    ? undefined
    : html`<a class="back-link" href="${context.pagePath(previous)}">Back</a>`
}

const detailsPage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) =>
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
            hint: `10 digits without the country code, like ${PHONE_EXAMPLE}. Change it if it is wrong.`,
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

/** The price of one way to pay, with a monthly plan's total beside it. */
const priceOf = (premiumCents: number, cadence: string, payments: number | undefined) =>
  cadence === "monthly"
    ? payments === undefined
      ? `${dollars(premiumCents)} a month`
      : `${dollars(premiumCents)} a month for ${payments} months (${dollars(premiumCents * payments)} in total)`
    : `${dollars(premiumCents)}, paid once`

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

const choosePage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
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
        button("Continue"),
      ],
    })}`,
  })
}

const quoteRows = (
  view: JourneyView,
  quote: NonNullable<JourneyView["quote"]>,
  issuer: IssuerConfigShape,
) => [
  { key: "Product", value: productNames[quote.product] },
  quote.product === "cash_deposit"
    ? { key: "Held by", value: `${SERVICE_NAME}, returned to you when the lease ends` }
    : { key: "Issued by", value: issuer.insurerName },
  quote.product === "cash_deposit"
    ? { key: "Deposit", value: dollars(quote.coverageAmountCents) }
    : {
        key: "Covers",
        value: `Up to ${coverageOfDeposit(quote.coverageAmountCents, view.lease.depositAmountCents).slice("up to ".length)}`,
      },
  { key: "Dates", value: `${longDate(quote.coverageStartDate)} to ${longDate(quote.coverageEndDate)}` },
  { key: "Price", value: priceOf(quote.premiumCents, quote.cadence, quote.payments) },
]

/** The terms the renter agrees to by paying: the chosen product's, at its version. */
const agreement = (quote: NonNullable<JourneyView["quote"]>, issuer: IssuerConfigShape) =>
  html`<p>
    By paying you agree to the
    ${newTabLink(termsPath(quote.product, quote.productVersion), `terms of ${productNames[quote.product]}`)}.
    ${quote.product === "cash_deposit" ? undefined : stillOwed(issuer)}
  </p>`

const quotePage = (view: JourneyView, context: PageContext, errors: ReadonlyArray<FieldError>) => {
  const quote = view.quote!
  const sent = context.submitted
  const due = dollars(quote.dueNowCents)
  const cards = context.testCards
  return journeyPageOf(context, "quote", {
    title: "Your quote",
    errors,
    body: html`${backLink(context)}
      <h1>Your quote</h1>
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
const checkPage = (view: JourneyView, context: PageContext) => {
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
        { key: "Phone number", value: view.renter.phone, change: "phone number", href: change("details") },
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

/** The element the script reads on a terminal page: the outcome it tells the parent window (`journeyPageOf`: who). */
const outcomeOf = (step: JourneyStep) => html`<div hidden data-outcome="${step}"></div>`

const continueLink = (context: PageContext) =>
  context.continueUrl === undefined
    ? undefined
    : html`<p>
        <a class="button" href="${context.continueUrl}">Continue to ${new URL(context.continueUrl).host}</a>
      </p>`

/** Each PDF of the archive on its own (a renter keeps documents, not zips), then the zip partners get. */
const documentLinks = (documentsUrl: string, policyNumber: string) => {
  const folder = documentsUrl.replace(/\.zip$/, "")
  const files = documentFileNames(policyNumber)
  return html`<h2>Your documents</h2>
    <ul class="list">
      <li><a href="${folder}/${files.declaration}">Policy declaration (PDF)</a></li>
      <li><a href="${folder}/${files.certificate}">Certificate of coverage (PDF)</a></li>
      <li><a href="${documentsUrl}" download>Both documents (ZIP file)</a></li>
    </ul>`
}

const completedPage = (view: JourneyView, context: PageContext) => {
  const policy = view.policy
  if (policy === undefined) {
    return journeyPageOf(context, "completed", {
      title: "Your deposit is protected",
      body: html`<h1>Your deposit is protected</h1>
        ${outcomeOf("completed")}
        <p>Your policy is being issued. Reload this page in a minute to see its number and documents.</p>
        ${continueLink(context)}`,
    })
  }
  const product = productOfPolicy(policy.productType)
  const nextCharge =
    policy.cadence === "monthly" && policy.nextChargeOn !== undefined
      ? `${dollars(view.quote?.premiumCents ?? policy.paidCents)} on ${longDate(policy.nextChargeOn)}, from the card ending ${policy.cardLast4}`
      : undefined
  return journeyPageOf(context, "completed", {
    title: "Your deposit is protected",
    body: html`<div class="panel">
        <h1>Your deposit is protected</h1>
        <div class="panel__body">Your policy number<br /><strong>${policy.policyNumber}</strong></div>
      </div>
      ${outcomeOf("completed")}
      ${summaryList([
        ...(view.quote ? quoteRows(view, view.quote, context.issuer) : []),
        { key: "Paid", value: `${dollars(policy.paidCents)} with the card ending ${policy.cardLast4}` },
        ...(nextCharge === undefined ? [] : [{ key: "Next payment", value: nextCharge }]),
      ])}
      <p>
        ${
          product === "cash_deposit"
            ? "Your deposit is returned to you when the lease ends, less what your landlord claims."
            : stillOwed(context.issuer)
        }
        ${newTabLink(termsPath(product, view.quote?.productVersion), `Terms of ${productNames[product]}`)}
      </p>
      ${
        policy.documentsUrl === undefined
          ? html`<p>
              Your policy documents are being prepared. Reload this page in a minute to download them.
            </p>`
          : documentLinks(policy.documentsUrl, policy.policyNumber)
      }
      ${continueLink(context)}`,
  })
}

const declinedPage = (view: JourneyView, context: PageContext) =>
  journeyPageOf(context, "declined", {
    title: "We cannot offer this protection",
    body: html`<h1>We cannot offer this protection</h1>
      ${outcomeOf("declined")}
      <p>
        None of the ways of protecting your deposit online can be offered to you, so you have not been
        charged.
      </p>
      <p>Contact ${view.owner.name} to agree another way to pay your security deposit.</p>
      ${continueLink(context)}`,
  })

const blockedPage = (view: JourneyView, context: PageContext) =>
  journeyPageOf(context, "blocked", {
    title: "You cannot continue online",
    body: html`<h1>You cannot continue online</h1>
      ${outcomeOf("blocked")}
      <p>We cannot offer you deposit protection for this home online. You have not been charged.</p>
      <p>Contact ${view.owner.name} for help.</p>
      ${continueLink(context)}`,
  })

/**
 * The page `context.page` (one the renter has reached: the HTTP layer checks), with the errors of what they just
 * sent.
 */
export const journeyPage = (view: JourneyView, context: PageContext): string => {
  const errors = errorsOf(view)
  switch (context.page) {
    case "details":
      return detailsPage(view, context, errors)
    case "income":
      return underwritingPage(view, context, errors)
    case "choose":
      return choosePage(view, context, errors)
    case "check":
      return checkPage(view, context)
    case "pay":
      return quotePage(view, context, errors)
    case "completed":
      return completedPage(view, context)
    case "declined":
      return declinedPage(view, context)
    case "blocked":
      return blockedPage(view, context)
  }
}

import { documentFileNames, type ProductType } from "../../policies/Domain.ts"
import type { JourneyStep, JourneyView } from "../Domain.ts"
import { html } from "../Html.ts"
import { newTabLink, summaryList } from "../Layout.ts"
import { termsPath } from "../Terms.ts"
import { journeyPageOf, type PageContext } from "./PageContext.ts"
import { dollars, longDate, productNames, productOfPolicy, quoteRows, stillOwed } from "./Wording.ts"

/** The element the script reads on a terminal page: the outcome it tells the parent window (`journeyPageOf`: who). */
const outcomeOf = (step: JourneyStep) => html`<div hidden data-outcome="${step}"></div>`

const continueLink = (context: PageContext) =>
  context.continueUrl === undefined
    ? undefined
    : html`<p>
        <a class="button" href="${context.continueUrl}">Continue to ${new URL(context.continueUrl).host}</a>
      </p>`

/** The names the receipt gives each document: a cash deposit's are a receipt and a record, not a policy's. */
export const documentTitles = (product: ProductType) =>
  product === "cash_deposit"
    ? { declaration: "Cash deposit receipt", certificate: "Certificate of deposit held" }
    : { declaration: "Policy declaration", certificate: "Certificate of coverage" }

/**
 * Each PDF of the archive on its own (a renter keeps documents, not zips), then the zip partners get. Until they
 * are stored, a notice the page's script replaces with the links once the page answers with them.
 */
const documentsSection = (product: ProductType, documentsUrl: string | undefined, policyNumber: string) => {
  if (documentsUrl === undefined) {
    return html`<div id="documents" data-refresh="documents" aria-live="polite">
      <h2>Your documents</h2>
      <p>Your documents are being prepared. They appear here in a minute.</p>
    </div>`
  }
  const folder = documentsUrl.replace(/\.zip$/, "")
  const files = documentFileNames(policyNumber)
  const titles = documentTitles(product)
  return html`<div id="documents" aria-live="polite">
    <h2>Your documents</h2>
    <ul class="list">
      <li><a href="${folder}/${files.declaration}">${titles.declaration} (PDF)</a></li>
      <li><a href="${folder}/${files.certificate}">${titles.certificate} (PDF)</a></li>
      <li><a href="${documentsUrl}" download>Both documents (ZIP file)</a></li>
    </ul>
  </div>`
}

/** The receipt's heading: insurance protects the deposit; a cash deposit is the deposit itself, paid. */
export const completedTitle = (product: ProductType) =>
  product === "cash_deposit" ? "Your cash deposit is paid" : "Your deposit is protected"

/** What the renter bought, in one line: insurance and who issues it, or a cash deposit and who holds it. */
const whatYouBought = (product: ProductType, amountCents: number, issuer: PageContext["issuer"]) =>
  product === "cash_deposit"
    ? `A refundable cash deposit of ${dollars(amountCents)}, held by ${issuer.depositHolderName} until your lease ends. It is not insurance.`
    : product === "renter_guarantee_insurance"
      ? `A renter guarantee: insurance issued by ${issuer.insurerName} that guarantees your landlord the rent and charges under your lease.`
      : `Deposit insurance: insurance issued by ${issuer.insurerName} that covers your landlord in place of a cash deposit.`

export const completedPage = (view: JourneyView, context: PageContext) => {
  const policy = view.policy
  if (policy === undefined) {
    const title = completedTitle(view.quote?.product ?? "security_deposit_insurance")
    return journeyPageOf(context, "completed", {
      title,
      body: html`<h1>${title}</h1>
        ${outcomeOf("completed")}
        <p>Your payment is being recorded. Reload this page in a minute to see your receipt and documents.</p>
        ${continueLink(context)}`,
    })
  }
  const product = productOfPolicy(policy.productType)
  const title = completedTitle(product)
  const nextCharge =
    policy.cadence === "monthly" && policy.nextChargeOn !== undefined
      ? `${dollars(view.quote?.premiumCents ?? policy.paidCents)} on ${longDate(policy.nextChargeOn)}, from the card ending ${policy.cardLast4}`
      : undefined
  return journeyPageOf(context, "completed", {
    title,
    body: html`<div class="panel">
        <h1>${title}</h1>
        <div class="panel__body">
          ${product === "cash_deposit" ? "Your deposit reference" : "Your policy number"}<br /><strong
            >${policy.policyNumber}</strong
          >
        </div>
      </div>
      ${outcomeOf("completed")}
      ${summaryList([
        { key: "What you bought", value: whatYouBought(product, policy.coverageAmountCents, context.issuer) },
        ...(view.quote ? quoteRows(view, view.quote, context.issuer) : []),
        {
          key: "Paid",
          value: `${dollars(policy.paidCents)} on ${longDate(policy.paidOn)} with the card ending ${policy.cardLast4}`,
        },
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
      ${documentsSection(product, policy.documentsUrl, policy.policyNumber)} ${continueLink(context)}`,
  })
}

export const declinedPage = (view: JourneyView, context: PageContext) =>
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

export const blockedPage = (view: JourneyView, context: PageContext) =>
  journeyPageOf(context, "blocked", {
    title: "You cannot continue online",
    body: html`<h1>You cannot continue online</h1>
      ${outcomeOf("blocked")}
      <p>We cannot offer you deposit protection for this home online. You have not been charged.</p>
      <p>Contact ${view.owner.name} for help.</p>
      ${continueLink(context)}`,
  })

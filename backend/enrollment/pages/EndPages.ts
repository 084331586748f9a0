import { documentFileNames } from "../../policies/Domain.ts"
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

export const completedPage = (view: JourneyView, context: PageContext) => {
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

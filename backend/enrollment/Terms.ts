import type { IssuerConfigShape } from "../policies/Config.ts"
import { RENTER_GUARANTEE_VERSION, type ProductType } from "../policies/Domain.ts"
import { html, type SafeHtml } from "./Html.ts"
import { page, PRIVACY_PATH, SERVICE_NAME, TERMS_PATH } from "./Layout.ts"

/**
 * The terms the renter agrees to, one page per product and version, and the privacy notice: served by the
 * enrollment host itself, so the links on the renter's pages name exactly what is bought.
 */

/** The address of a product's terms: `/enrollment/terms/<product>`, and `/<version>` for a versioned product. */
export const termsPath = (product: ProductType, version?: string) =>
  `${TERMS_PATH}/${product}${version === undefined ? "" : `/${version}`}`

interface Terms {
  readonly product: ProductType
  readonly version?: string
  readonly name: string
  readonly body: (issuer: IssuerConfigShape) => SafeHtml
}

const oweTheInsurer = html`<h2>What you still owe</h2>
  <p>
    The policy pays your landlord, not you. If your landlord claims for damage to the home or for rent or
    charges you did not pay, the insurer pays the claim up to the coverage amount and you must then pay the
    insurer back every amount it paid. The premium does not reduce what you owe.
  </p>
  <p>
    The coverage amount can be less than your security deposit. Anything your landlord claims beyond it is for
    you to settle with your landlord directly.
  </p>`

const payingAndChanges = html`<h2>Paying</h2>
  <p>
    You pay the premium shown on your quote, either once when you buy the policy or every month for each month
    of coverage (a part month counts as a whole one). The first monthly premium is charged when you buy the
    policy, the next one a month after the coverage starts. Premiums are not a deposit: they are not returned
    at the end of the lease.
  </p>
  <p>
    If a monthly premium cannot be charged, it is added to the next one and your landlord may be told that a
    payment was missed.
  </p>
  <h2>Changes to your lease</h2>
  <p>
    When your lease changes (its dates, the home, the coverage), the policy is revised and you receive new
    policy documents. The declaration in your newest documents is the one that applies.
  </p>`

/** How a policy is canceled and what is refunded: what operators do on a renter's request. */
const cancelling = (issuer: IssuerConfigShape) =>
  html`<h2>Cancelling</h2>
    <p>
      To cancel, email <a href="mailto:${issuer.supportEmail}">${issuer.supportEmail}</a> with your policy
      number (on your receipt and your policy documents). The policy ends on the day it is canceled and your
      landlord is told.
    </p>
    <p>
      What is refunded: nothing. Nothing more is charged after a policy is canceled, so monthly premiums stop;
      premiums already paid, including a premium paid once for the whole lease, are not refunded.
    </p>`

const TERMS: ReadonlyArray<Terms> = [
  {
    product: "security_deposit_insurance",
    name: "Deposit insurance",
    body: (issuer) =>
      html`<p>
          Deposit insurance (security deposit insurance, as your policy documents call it) is an insurance
          policy issued by ${issuer.insurerName}. It takes the place of a cash security deposit for the lease
          it names: your landlord is covered up to the coverage amount on your policy declaration, from the
          start of your lease to its end.
        </p>
        <h2>What is covered</h2>
        <p>
          Your landlord may claim for damage to the home beyond normal wear and tear, and for rent or other
          charges under the lease that you did not pay.
        </p>
        ${oweTheInsurer} ${payingAndChanges} ${cancelling(issuer)}`,
  },
  {
    product: "renter_guarantee_insurance",
    version: RENTER_GUARANTEE_VERSION,
    name: "Renter guarantee",
    body: (issuer) =>
      html`<p>
          The renter guarantee is an insurance policy issued by ${issuer.insurerName}. It guarantees your
          landlord the rent and charges due under the lease it names, up to the coverage amount on your policy
          declaration, from the start of your lease to its end. These are the terms of version
          ${RENTER_GUARANTEE_VERSION}.
        </p>
        <h2>What is covered</h2>
        <p>
          Your landlord may claim for rent and other charges under the lease that you did not pay, and for
          damage to the home beyond normal wear and tear.
        </p>
        ${oweTheInsurer} ${payingAndChanges} ${cancelling(issuer)}`,
  },
  {
    product: "cash_deposit",
    name: "Refundable cash deposit",
    body: (issuer) =>
      html`<p>
          A cash deposit is not insurance. You pay your whole security deposit once;
          ${issuer.depositHolderName} holds it for your landlord for the lease it names.
        </p>
        <h2>Getting it back</h2>
        <p>
          When the lease ends, the deposit is returned to you, less any amount your landlord claims for damage
          to the home beyond normal wear and tear, or for rent or charges you did not pay.
        </p>
        <h2>Changes to your lease</h2>
        <p>When your lease changes, you receive new documents stating the deposit held.</p>
        <h2>Cancelling</h2>
        <p>
          To cancel, email <a href="mailto:${issuer.supportEmail}">${issuer.supportEmail}</a> with your
          deposit reference (it starts DEP-). What is refunded: the deposit, when the lease ends or the
          deposit is canceled, less what your landlord claims under the lease.
        </p>`,
  },
]

const termsOf = (product: string, version: string | undefined) =>
  TERMS.find((terms) => terms.product === product && terms.version === version)

/** The page of a product's terms, or undefined when no product or version has that address. */
export const termsPage = (issuer: IssuerConfigShape, product: string, version: string | undefined) => {
  const terms = termsOf(product, version)
  if (terms === undefined) return undefined
  const title = `${terms.name}: terms${terms.version === undefined ? "" : ` (version ${terms.version})`}`
  return page({
    title,
    issuer,
    body: html`<h1>${title}</h1>
      ${terms.body(issuer)}
      <h2>Questions</h2>
      <p>
        Email <a href="mailto:${issuer.supportEmail}">${issuer.supportEmail}</a>. How we use your details is
        in the <a href="${PRIVACY_PATH}">privacy notice</a>.
      </p>`,
  })
}

/** Every product's terms, for the link on the underwriting step, before a product is chosen. */
export const termsIndexPage = (issuer: IssuerConfigShape) =>
  page({
    title: "Terms",
    issuer,
    body: html`<h1>Terms</h1>
      <p>The terms of each way to protect your deposit:</p>
      <ul class="list">
        ${TERMS.map(
          (terms) =>
            html`<li>
              <a href="${termsPath(terms.product, terms.version)}"
                >${terms.name}${terms.version === undefined ? "" : ` (version ${terms.version})`}</a
              >
            </li>`,
        )}
      </ul>`,
  })

export const privacyPage = (issuer: IssuerConfigShape) =>
  page({
    title: "Privacy notice",
    issuer,
    body: html`<h1>Privacy notice</h1>
      <p>
        ${SERVICE_NAME} receives your details from the company renting you the home, and from you while you
        enroll, to offer, sell and run your deposit protection.
      </p>
      <h2>What we keep</h2>
      <ul class="list">
        <li>your name, email address, phone number and date of birth;</li>
        <li>the home, your lease, the rent and the security deposit;</li>
        <li>your answers: yearly income, employment status and whether you have a Social Security number;</li>
        <li>
          your policy and its payments: the last four digits of your card, never its number or security code.
        </li>
      </ul>
      <h2>Who we share it with</h2>
      <p>
        ${issuer.insurerName}, which issues the insurance; the payment provider that charges your card; and
        your landlord and the company that sent you the link, which learn whether you bought a policy and what
        it covers.
      </p>
      <h2>Questions</h2>
      <p>
        To see or correct what we hold about you, email
        <a href="mailto:${issuer.supportEmail}">${issuer.supportEmail}</a>.
      </p>`,
  })

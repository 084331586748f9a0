import type { IssuerConfigShape } from "../../policies/Config.ts"
import type { JourneyStep } from "../Domain.ts"
import { html } from "../Html.ts"
import { page, type PageContent } from "../Layout.ts"
import { previousPage, type StepPage } from "../StepPages.ts"

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
  /** The owner's display name, shown in the header. */
  readonly ownerName?: string | undefined
}

/**
 * The pages before the policy, numbered for the renter ("Step 2 of 5"): the check of the answers and the payment
 * are steps of their own, as the renter sees two pages.
 */
const STEP_NUMBERS: Partial<Record<StepPage, number>> = {
  details: 1,
  income: 2,
  choose: 3,
  check: 4,
  pay: 5,
}
export const STEP_COUNT = 5

/** A journey page: the issuer's footer, the owner's name, and the page's number while there are steps to go. */
export const journeyPageOf = (
  context: PageContext,
  _step: JourneyStep,
  content: Omit<PageContent, "issuer" | "progress">,
) => {
  const number = STEP_NUMBERS[context.page]
  return page({
    ...content,
    issuer: context.issuer,
    parentOrigins: context.parentOrigins,
    ownerName: context.ownerName,
    ...(number === undefined ? {} : { progress: { step: number, of: STEP_COUNT } }),
  })
}

/** GOV.UK's Back link: to the page before this one, or to the check of the answers the renter came from. */
export const backLink = (context: PageContext) => {
  const previous = context.returnTo ?? previousPage(context.page)
  return previous === undefined
    ? undefined
    : html`<a class="back-link" href="${context.pagePath(previous)}">Back</a>`
}

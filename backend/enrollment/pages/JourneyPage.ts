import type { JourneyView } from "../Domain.ts"
import { checkPage } from "./CheckPage.ts"
import { choosePage } from "./ChoosePage.ts"
import { detailsPage } from "./DetailsPage.ts"
import { blockedPage, completedPage, declinedPage } from "./EndPages.ts"
import { errorsOf } from "./FieldErrors.ts"
import { incomePage } from "./IncomePage.ts"
import type { PageContext } from "./PageContext.ts"
import { payPage } from "./PayPage.ts"

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
      return incomePage(view, context, errors)
    case "choose":
      return choosePage(view, context, errors)
    case "check":
      return checkPage(view, context)
    case "pay":
      return payPage(view, context, errors)
    case "completed":
      return completedPage(view, context)
    case "declined":
      return declinedPage(view, context)
    case "blocked":
      return blockedPage(view, context)
  }
}

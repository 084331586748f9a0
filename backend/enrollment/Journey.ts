import { Context, type Effect } from "effect"
import type {
  ChoiceInput,
  DetailsInput,
  JourneyLink,
  JourneyView,
  LinkInvalid,
  PaymentInput,
  Preselection,
  UnderwritingInput,
} from "./Domain.ts"

/**
 * The renter's enrollment journey: the one orchestration behind the renter's pages and the CLI helper
 * (`npm run cli -- enrollment complete`). Every call checks the link again and answers with the journey as it is
 * after the call; a call that does not fit the step the renter is on (a double submit, a back button) changes
 * nothing and answers with the current step, so no call charges twice. What the renter can fix comes back in
 * `view.error` on the same step; only a link that names no journey fails (`LinkInvalid`).
 */
export interface JourneyShape {
  /** The journey as it stands; `preselection` is what an `offered_products` link names. */
  readonly open: (link: JourneyLink, preselection?: Preselection) => Effect.Effect<JourneyView, LinkInvalid>
  /** Step `details`: the renter confirms what the partner sent (and may correct the phone). */
  readonly confirmDetails: (link: JourneyLink, input: DetailsInput) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * Step `underwriting`: the last underwriting inputs; the offers (and the prospect's `offered_products`) are
   * filled. Nothing to offer any more (the building left the roster, the lease ended): `blocked`.
   */
  readonly supplyUnderwritingInputs: (
    link: JourneyLink,
    input: UnderwritingInput,
  ) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * Steps `choose` and `quote`: the renter picks an offered product and cadence; `policy_application.created`,
   * then underwriting: `policy_application.quoted` (step `quote`) or `policy_application.declined` (terminal
   * `declined`). Choosing again on `quote` cancels the quoted application and starts another.
   */
  readonly choose: (link: JourneyLink, input: ChoiceInput) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * Step `quote`: the renter pays through the payment provider. A declined card stays on `quote` with
   * `view.error`; a charge that succeeds submits the application (`policy_application.submitted`), issues the
   * policy (`policy.created`) and asks for its documents (`policy.documents_updated` follows): `completed`.
   */
  readonly pay: (link: JourneyLink, input: PaymentInput) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * The link of a prospect by its key, for the CLI helper (development and staging), which walks the journey as
   * the renter would. Not for the pages: they only ever act on the link they were given.
   */
  readonly linkFor: (source: string, sourceProspectId: string) => Effect.Effect<JourneyLink, LinkInvalid>
}

export class Journey extends Context.Service<Journey, JourneyShape>()("partner-service/enrollment/Journey") {}

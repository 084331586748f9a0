import { Clock, Context, DateTime, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { EnrollmentFacts } from "../prospects/Domain.ts"
import { Enrollments } from "../prospects/Enrollments.ts"
import { Policies } from "../policies/Policies.ts"
import {
  type ChoiceInput,
  type DetailsInput,
  type EmploymentStatus,
  type JourneyError,
  type JourneyLink,
  type JourneyView,
  LinkInvalid,
  type Offer,
  type PaymentInput,
  type Preselection,
  type UnderwritingInput,
} from "./Domain.ts"
import { type Answers, parseCard, parseChoice, parseDetails, parseUnderwriting } from "./Inputs.ts"
import { EnrollmentRepo, type EnrollmentRow } from "./Repo.ts"
import { type JourneyState, journeyView, offeredProducts, stepOf } from "./View.ts"

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
   * Step `underwriting`: the last underwriting inputs; the offers (and the prospect's `offered_products`) are the
   * products that pass the rules with these answers. None: `declined`. Nothing to offer any more on the partner's
   * data (the building left the roster, the lease ended): `blocked`. The same answers again keep the quote.
   */
  readonly supplyUnderwritingInputs: (
    link: JourneyLink,
    input: UnderwritingInput,
  ) => Effect.Effect<JourneyView, LinkInvalid>
  /**
   * Steps `choose` and `quote`: the renter picks an offered product and cadence; `policy_application.created`,
   * then underwriting: `policy_application.quoted` (step `quote`) or `policy_application.declined` (back to
   * `choose` with the other offers and `view.refused`; terminal `declined` when none is left). Choosing again on
   * `quote` cancels the quoted application and starts another.
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

export class Journey extends Context.Service<Journey, JourneyShape>()("partner-service/enrollment/Journey") {
  static readonly layer = Layer.effect(
    Journey,
    Effect.gen(function* () {
      const db = yield* Db
      const repo = yield* EnrollmentRepo
      const enrollments = yield* Enrollments
      const policies = yield* Policies

      const realToday = Effect.map(Clock.currentTimeMillis, (millis) =>
        DateTime.formatIsoDateUtc(DateTime.makeUnsafe(millis)),
      )

      /** The prospect the link names, if the link may act on it; else LinkInvalid (with the reason, for logs). */
      const resolve = (link: JourneyLink) =>
        Effect.gen(function* () {
          const facts = yield* enrollments.enrollmentFacts(link.source, link.sourceProspectId)
          if (facts === undefined) return yield* new LinkInvalid({ reason: "no such prospect" })
          if (facts.owner.slug !== link.ownerSlug) {
            return yield* new LinkInvalid({ reason: "the prospect belongs to another owner" })
          }
          if (
            facts.prospect.email === null ||
            facts.prospect.email.toLowerCase() !== link.email.trim().toLowerCase()
          ) {
            return yield* new LinkInvalid({ reason: "the email does not match the prospect's" })
          }
          return facts
        })

      /** The renter's underwriting answers, once they gave them. */
      const answersOf = (enrollment: EnrollmentRow | undefined): Answers | undefined =>
        enrollment?.inputs_supplied_at == null
          ? undefined
          : {
              yearlyIncome: Number(enrollment.yearly_income),
              employmentStatus: enrollment.employment_status as EmploymentStatus,
              hasSsn: enrollment.has_ssn === true,
            }

      /** The offers as the prospect's `offered_products` and `percent_savings` publish them. */
      const publishOffers = (facts: EnrollmentFacts, offers: ReadonlyArray<Offer>) => {
        const sdi = offers.find((o) => o.product === "security_deposit_insurance")
        return enrollments.recordOffers(
          facts.prospect.id,
          offeredProducts(offers, facts.enrollmentUrl),
          policies.percentSavings(
            facts.prospect.depositAmountCents ?? 0,
            sdi?.cadences.find((c) => c.cadence === "upfront")?.premiumCents,
          ),
        )
      }

      /** Reads the journey's state; before the renter began, only a prospect eligible for something may start. */
      const stateOf = (facts: EnrollmentFacts) =>
        Effect.gen(function* () {
          const enrollment = yield* repo.find(facts.prospect.id)
          if (enrollment?.details_confirmed_at == null && !facts.prospect.eligible) {
            return yield* new LinkInvalid({
              reason: `the prospect is ${facts.prospect.status} and not eligible`,
            })
          }
          const application =
            enrollment?.application_id == null
              ? undefined
              : yield* policies.findApplication(enrollment.application_id)
          const policy =
            application?.outcome === "submitted"
              ? yield* policies.policyOfApplication(application.id)
              : undefined
          // The owner's date: a test clock moved ahead issues, dates and bills the policy as of its date.
          const day = yield* policies.todayOf(facts.owner.id)
          return {
            facts,
            enrollment,
            application,
            policy,
            today: day,
            offers: policies.offersFor(facts, day, answersOf(enrollment)),
            ineligibility: () => policies.ineligibility(facts, day),
            notOffered: () => policies.productsNotOffered(facts, day, answersOf(enrollment)),
          } satisfies JourneyState
        })

      /**
       * A call that changes the journey: the link resolved, then under the journey's lock in one transaction the
       * state read and `act` run on it; answers with the view after it (or with `act`'s error on the same step).
       */
      const viewOf = (
        link: JourneyLink,
        state: JourneyState,
        extra: {
          readonly preselection?: Preselection | undefined
          readonly error?: JourneyError | undefined
        },
      ) =>
        Effect.map(
          state.policy === undefined ? Effect.succeed(undefined) : policies.documentsUrlOf(state.policy.id),
          (documentsUrl) => journeyView(link, state, { ...extra, documentsUrl }),
        )

      const change = (
        name: string,
        link: JourneyLink,
        act: (state: JourneyState) => Effect.Effect<JourneyError | undefined, LinkInvalid>,
      ) =>
        Effect.gen(function* () {
          const facts = yield* resolve(link)
          return yield* db.transaction(
            Effect.gen(function* () {
              yield* repo.lock(facts.prospect.id)
              const error = yield* act(yield* stateOf(facts))
              return yield* viewOf(link, yield* stateOf(facts), { error })
            }),
          )
        }).pipe(
          Effect.tapError((invalid) =>
            Effect.logInfo("enrollment link refused").pipe(Effect.annotateLogs({ reason: invalid.reason })),
          ),
          Effect.withSpan(`Journey.${name}`),
        )

      const fieldsError = (fields: Readonly<Record<string, string>>): JourneyError => ({
        kind: "fields",
        fields,
      })

      const open = (link: JourneyLink, preselection?: Preselection) =>
        Effect.gen(function* () {
          const facts = yield* resolve(link)
          return yield* viewOf(link, yield* stateOf(facts), { preselection })
        }).pipe(
          Effect.tapError((invalid) =>
            Effect.logInfo("enrollment link refused").pipe(Effect.annotateLogs({ reason: invalid.reason })),
          ),
          Effect.withSpan("Journey.open"),
        )

      const confirmDetails = (link: JourneyLink, input: DetailsInput) =>
        change("confirmDetails", link, (state) =>
          Effect.gen(function* () {
            const step = stepOf(state)
            if (step === "completed" || step === "declined" || step === "blocked") return undefined
            const parsed = parseDetails(input)
            if ("fields" in parsed) return fieldsError(parsed.fields)
            yield* repo.confirmDetails(state.facts.prospect.id, parsed.ok.phone)
            return undefined
          }),
        )

      const supplyUnderwritingInputs = (link: JourneyLink, input: UnderwritingInput) =>
        change("supplyUnderwritingInputs", link, (state) =>
          Effect.gen(function* () {
            const step = stepOf(state)
            if (step !== "underwriting" && step !== "choose" && step !== "quote") return undefined
            const parsed = parseUnderwriting(input)
            if ("fields" in parsed) return fieldsError(parsed.fields)
            const before = answersOf(state.enrollment)
            const unchanged =
              before !== undefined &&
              before.yearlyIncome === parsed.ok.yearlyIncome &&
              before.employmentStatus === parsed.ok.employmentStatus &&
              before.hasSsn === parsed.ok.hasSsn
            // The same answers sent again (Back, then Continue): the quote made on them still stands.
            if (unchanged && step === "quote") return undefined
            // New answers: the quote made on the old ones no longer stands.
            if (state.application?.outcome === "quoted") {
              yield* policies.cancelApplication(state.application.id)
              yield* repo.setApplication(state.facts.prospect.id, null)
            }
            // What passes the rules with the renter's own answers: nothing else is offered.
            const offers: ReadonlyArray<Offer> = policies.offersFor(state.facts, state.today, parsed.ok)
            yield* repo.supplyInputs(state.facts.prospect.id, { ...parsed.ok, offers })
            yield* publishOffers(state.facts, offers)
            return undefined
          }),
        )

      const choose = (link: JourneyLink, input: ChoiceInput) =>
        change("choose", link, (state) =>
          Effect.gen(function* () {
            const step = stepOf(state)
            if (step !== "choose" && step !== "quote") return undefined
            const enrollment = state.enrollment!
            const parsed = parseChoice(input, enrollment.offers ?? [])
            if ("fields" in parsed) return fieldsError(parsed.fields)
            const { product, cadence } = parsed.ok
            const current = state.application
            if (current?.outcome === "quoted" && current.status === "created") {
              if (current.product_type === product && current.cadence === cadence) return undefined
              yield* policies.cancelApplication(current.id)
            }
            const application = yield* policies.apply({
              facts: state.facts,
              product,
              cadence,
              answers: answersOf(enrollment)!,
              today: state.today,
            })
            yield* repo.setApplication(state.facts.prospect.id, application.id)
            if (application.outcome === "declined") {
              // A rule the answers could not show (the prospect changed since they were given): the renter goes
              // back to the products still open, and the journey is `declined` only when none is.
              const open = state.offers.filter((o) => o.product !== product)
              yield* repo.setOffers(state.facts.prospect.id, open)
              yield* publishOffers(state.facts, open)
            }
            return undefined
          }),
        )

      const pay = (link: JourneyLink, input: PaymentInput) =>
        change("pay", link, (state) =>
          Effect.gen(function* () {
            if (stepOf(state) !== "quote") return undefined
            // A card expires in the real world, whatever the owner's test clock says.
            const card = parseCard(input, yield* realToday)
            if ("fields" in card) return fieldsError(card.fields)
            const outcome = yield* policies.pay(state.application!, card.ok, state.facts, state.today)
            return outcome.paid ? undefined : ({ kind: "payment_declined", message: outcome.reason } as const)
          }),
        ).pipe(Effect.uninterruptible)

      const linkFor = (source: string, sourceProspectId: string) =>
        Effect.gen(function* () {
          const facts = yield* enrollments.enrollmentFacts(source, sourceProspectId)
          if (facts === undefined || facts.prospect.email === null) {
            return yield* new LinkInvalid({ reason: "no such prospect" })
          }
          return {
            flow: facts.source.flow,
            ownerSlug: facts.owner.slug,
            source,
            sourceProspectId,
            email: facts.prospect.email,
          } satisfies JourneyLink
        })

      return Journey.of({ open, confirmDetails, supplyUnderwritingInputs, choose, pay, linkFor })
    }),
  ).pipe(Layer.provide(EnrollmentRepo.layer))
}

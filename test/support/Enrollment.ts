import { Effect, type Layer } from "effect"
import { Journey } from "../../backend/enrollment/Journey.ts"
import type { JourneyLink, JourneyView } from "../../backend/enrollment/Domain.ts"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { testCa } from "./Receiver.ts"
import { authEnv, authService } from "./Auth.ts"
import { ENROLLMENT_HOST } from "./Prospects.ts"

/**
 * The whole service for enrollment tests: the partner gateway, the enrollment host and the workers (relay,
 * eligibility, document actor, webhook router and delivery) on an isolated database and prefix, delivering to
 * the test receiver.
 */
export const enrollmentService = (overrides: Record<string, string> = {}, references?: Layer.Layer<never>) =>
  authService({
    ...(references === undefined ? {} : { references }),
    env: authEnv({
      ROLES: "partner-api,enrollment,workers",
      ENROLLMENT_PORT: "0",
      ENROLLMENT_HOST,
      CONSOLE_BASE_URL: "https://console.test",
      WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
      WEBHOOK_BACKOFF_UNIT_MS: "5",
      ...overrides,
    }),
  })

/** The link a prospect's `enrollment_url` names. */
export const linkOf = (enrollmentUrl: string): JourneyLink => {
  const url = new URL(enrollmentUrl)
  const [, , flow, ownerSlug, source, sourceProspectId] = url.pathname.split("/").map(decodeURIComponent)
  return {
    flow: flow as JourneyLink["flow"],
    ownerSlug: ownerSlug!,
    source: source!,
    sourceProspectId: sourceProspectId!,
    email: url.searchParams.get("email")!,
  }
}

export interface Walk {
  readonly product: string
  readonly cadence?: string
  readonly card?: keyof typeof TEST_CARDS
  /** The renter's yearly income, when it differs from what the partner sent. */
  readonly yearlyIncome?: number
  readonly hasSsn?: boolean
}

/** A renter walking the journey through the Journey service, step by step; every view on the way. */
export const walkJourney = (link: JourneyLink, walk: Walk) =>
  Effect.gen(function* () {
    const journey = yield* Journey
    const views: Array<JourneyView> = []
    const step = <E>(call: Effect.Effect<JourneyView, E>) =>
      Effect.tap(call, (view) => Effect.sync(() => views.push(view)))
    const opened = yield* step(journey.open(link))
    yield* step(journey.confirmDetails(link, {}))
    yield* step(
      journey.supplyUnderwritingInputs(link, {
        yearlyIncome: String(walk.yearlyIncome ?? opened.answers.yearlyIncome),
        employmentStatus: opened.answers.employmentStatus ?? "employed",
        hasSsn: walk.hasSsn ?? opened.answers.hasSsn ?? true,
        termsAccepted: true,
      }),
    )
    const chosen = yield* step(journey.choose(link, { product: walk.product, cadence: walk.cadence }))
    if (chosen.step !== "quote") return views
    yield* step(
      journey.pay(link, {
        cardNumber: TEST_CARDS[walk.card ?? "ok"],
        expiry: "12/39",
        cvc: "123",
        nameOnCard: "John Doe",
      }),
    )
    return views
  })

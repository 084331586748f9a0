import { Effect, type Layer } from "effect"
import { Journey } from "../../backend/enrollment/Journey.ts"
import type { JourneyLink, JourneyView } from "../../backend/enrollment/Domain.ts"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { testCa } from "./Receiver.ts"
import { type Answer, authEnv, authService, gatewayPort, httpRequest } from "./Auth.ts"
import {
  awaitProspect,
  completeProspect,
  ENROLLMENT_HOST,
  issueSource,
  postProspect,
  prospectPartner,
  provisionedOwner,
} from "./Prospects.ts"
import type { RosterPartner } from "./Roster.ts"

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

export interface Walk<R = never> {
  readonly product: string
  readonly cadence?: string
  readonly card?: keyof typeof TEST_CARDS
  /** The card's expiry as typed (`MM/YY`); 12/39 unless said. */
  readonly expiry?: string
  /** The renter's yearly income, when it differs from what the partner sent. */
  readonly yearlyIncome?: number
  readonly hasSsn?: boolean
  /** What happens between the renter's answers and their choice (the partner changing the prospect). */
  readonly beforeChoosing?: Effect.Effect<unknown, never, R>
}

/** A renter walking the journey through the Journey service, step by step; every view on the way. */
export const walkJourney = <R = never>(link: JourneyLink, walk: Walk<R>) =>
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
    if (walk.beforeChoosing !== undefined) yield* walk.beforeChoosing
    const chosen = yield* step(journey.choose(link, { product: walk.product, cadence: walk.cadence }))
    if (chosen.step !== "quote") return views
    yield* step(
      journey.pay(link, {
        cardNumber: TEST_CARDS[walk.card ?? "ok"],
        expiry: walk.expiry ?? "12/39",
        cvc: "123",
        nameOnCard: "John Doe",
      }),
    )
    return views
  })

export interface Renter {
  readonly partner: RosterPartner
  readonly slug: string
  readonly source: string
  readonly sourceProspectId: string
  readonly email: string
  /** The prospect's `enrollment_url` (on the source's flow) and `hosted_enrollment_url`, as the API gave them. */
  readonly enrollmentUrl: string
  readonly hostedEnrollmentUrl: string
}

/**
 * A partner, an owner (with `frameAncestors`), a source (on `flow`, allowing `redirectDomains`) and a prospect of
 * it that is ready and eligible, with its enrollment links.
 */
export const enrollableRenter = (
  org: string,
  options: {
    readonly flow?: "embedded" | "expedited"
    readonly frameAncestors?: ReadonlyArray<string>
    readonly redirectDomains?: ReadonlyArray<string>
    /** More of the owner's fields, such as its `brand_name`. */
    readonly owner?: Record<string, unknown>
    readonly prospect?: Record<string, unknown>
    readonly sourceProspectId?: string
  } = {},
) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    const source = `src-${org}`
    yield* issueSource({
      code: source,
      clients: [partner.clientId],
      flow: options.flow ?? "embedded",
      redirectDomains: options.redirectDomains ?? [],
    })
    const slug = yield* provisionedOwner(partner, org, {
      owner: { embedded_frame_ancestors: options.frameAncestors ?? [], ...options.owner },
    })
    return yield* anotherRenter(
      { partner, slug, source },
      options.sourceProspectId ?? `p-${org}`,
      options.prospect,
    )
  })

/** One more ready, eligible prospect of the same owner and source. */
export const anotherRenter = (
  at: { readonly partner: RosterPartner; readonly slug: string; readonly source: string },
  sourceProspectId: string,
  overrides: Record<string, unknown> = {},
) =>
  Effect.gen(function* () {
    const body = completeProspect(at.source, sourceProspectId, overrides)
    const posted = yield* postProspect(at.partner, at.slug, body)
    if (posted.status !== 200)
      return yield* Effect.die(new Error(`prospect answered ${posted.status}: ${posted.text}`))
    const prospect = yield* awaitProspect(at.partner, at.slug, at.source, sourceProspectId)
    if (typeof prospect.enrollment_url !== "string" || typeof prospect.hosted_enrollment_url !== "string") {
      return yield* Effect.die(
        new Error(`prospect ${sourceProspectId} is not eligible: ${JSON.stringify(prospect)}`),
      )
    }
    return {
      ...at,
      sourceProspectId,
      email: body.email as string,
      enrollmentUrl: prospect.enrollment_url,
      hostedEnrollmentUrl: prospect.hosted_enrollment_url,
    } satisfies Renter
  })

/** A URL's path and query, to request it from the enrollment gateway directly. */
export const pathOf = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

/**
 * `GET path` on the enrollment host, following its redirects on the host as a browser would (a link redirects to
 * the page of the renter's step); a redirect elsewhere is the answer.
 */
export const getPage = (path: string) =>
  Effect.gen(function* () {
    const port = yield* gatewayPort("enrollment")
    let answer = yield* httpRequest(port, path, { redirect: "manual" })
    for (let hops = 0; hops < 5 && answer.status === 303; hops++) {
      const location = answer.headers.get("location") ?? ""
      if (!location.startsWith("/enrollment/")) break
      answer = yield* httpRequest(port, location, { redirect: "manual" })
    }
    return answer
  })

/** The CSRF token of a page's form. */
export const formTokenOf = (page: Answer) => /name="csrf_token" value="([^"]+)"/.exec(page.text)?.[1] ?? ""

/**
 * `POST path` as the page's own form would (its token, this host's `Origin`), or as `options` say; redirects
 * are not followed.
 */
export const postForm = (
  path: string,
  fields: Record<string, string>,
  options: { readonly token?: string; readonly origin?: string | null } = {},
) =>
  Effect.gen(function* () {
    const token = options.token ?? formTokenOf(yield* getPage(path))
    const origin = options.origin === undefined ? ENROLLMENT_HOST : options.origin
    return yield* httpRequest(yield* gatewayPort("enrollment"), path, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        ...(origin === null ? {} : { origin }),
      },
      body: new URLSearchParams({ csrf_token: token, ...fields }).toString(),
    })
  })

/** The text of a page's `<h1>` (the first one), tags removed. */
export const headingOf = (page: Answer) =>
  (/<h1[^>]*>([\s\S]*?)<\/h1>/.exec(page.text)?.[1] ?? "").replace(/<[^>]+>/g, "").trim()

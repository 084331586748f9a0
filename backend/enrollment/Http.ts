import { Cause, Clock, Effect, Exit, Option } from "effect"
import { FastResponse } from "srvx/node"
import { Cadences, type Cadence, type ProductType, ProductTypes } from "../policies/Domain.ts"
import { TEST_CARDS } from "../policies/Payments.ts"
import type { AddressThrottled } from "../platform/AddressThrottle.ts"
import { AppConfig } from "../platform/Config.ts"
import { Crypto } from "../platform/Crypto.ts"
import {
  type BadRequest,
  type HttpRequest,
  parseFormText,
  type PayloadTooLarge,
  type Route,
} from "../platform/Http.ts"
import { unavailableIn } from "../platform/Unavailable.ts"
import { Roster } from "../roster/Roster.ts"
import { type Asset, assets } from "./Assets.ts"
import { type JourneyLink, type JourneyView, LinkInvalid, type Preselection } from "./Domain.ts"
import { FORM_STATE_PARAM, openFormState, sealFormState } from "./FormState.ts"
import { formTokenValid, issueFormToken, postedFromThisHost } from "./FormToken.ts"
import { Journey, type JourneyShape } from "./Journey.ts"
import { LinkThrottle } from "./LinkThrottle.ts"
import { Policies } from "../policies/Policies.ts"
import { privacyPage, termsIndexPage, termsPage } from "./Terms.ts"
import { type EnrollmentLink, followedRedirect, linkPath, pagePath, parseLink } from "./Link.ts"
import {
  badRequestPage,
  formRefusedPage,
  NEUTRAL_STATUS,
  neutralPage,
  notFoundPage,
  THROTTLED_STATUS,
  throttledPage,
  unavailablePage,
} from "./Notices.ts"
import { parseChoice } from "./pages/ChoosePage.ts"
import { journeyPage } from "./pages/JourneyPage.ts"
import { assetHeaders, type Framing, pageHeaders } from "./SecurityHeaders.ts"
import { isStepPage, nextPage, openPages, pageOfForm, pageOfStep, type StepPage } from "./StepPages.ts"
import { IssuerConfig, type IssuerConfigShape, PaymentsConfig } from "../policies/Config.ts"

/**
 * The enrollment host's routes: the renter's pages of an enrollment link, each at its own address (the link itself
 * redirects to the page of the step the renter is on; GET of a page shows it once the renter reached it, with the
 * answers given; POST answers its form and redirects to the next page), the pages' own CSS and script, the terms
 * and the privacy notice, the policy documents, the neutral page for anything else under `/enrollment/` and a
 * "not found" page for the rest of the host.
 */

type Services =
  Journey | LinkThrottle | Policies | Roster | AppConfig | PaymentsConfig | IssuerConfig | Crypto

const LINK_PATH = "/enrollment/:flow/:owner_slug/:source/:source_prospect_id"
const PAGE_PATH = `${LINK_PATH}/:page`

const htmlResponse = (status: number, body: string, headers: Record<string, string>) =>
  new FastResponse(body, { status, headers })

const seeOther = (location: string) =>
  new FastResponse(null, { status: 303, headers: { location, "cache-control": "no-store" } })

/**
 * Who may frame the link's pages, whether or not the link is valid: an embedded link's owner's origins, so a
 * partner's frame shows the neutral page rather than a browser error. It depends on the owner alone (whose slug
 * every link of the owner shows), never on the prospect.
 */
const framingOf = (params: Readonly<Record<string, string | undefined>>) =>
  Effect.gen(function* () {
    const flow = params.flow === "embedded" || params.flow === "expedited" ? params.flow : undefined
    const slug = params.owner_slug
    if (flow !== "embedded" || slug === undefined || slug.length > 255) {
      return { flow, frameAncestors: [] } satisfies Framing
    }
    const owner = yield* Roster.use((roster) => roster.ownerBySlug(slug))
    return { flow, frameAncestors: owner?.embedded_frame_ancestors ?? [] } satisfies Framing
  })

const noFraming: Framing = { flow: undefined, frameAncestors: [] }

const isHttps = Effect.map(Effect.service(AppConfig), (config) => config.enrollmentHost.startsWith("https:"))

/** A page that shows no journey, with the headers of every renter page. */
export const noticeResponse = (
  status: number,
  render: (issuer: IssuerConfigShape) => string,
  framing: Framing = noFraming,
  extraHeaders: Record<string, string> = {},
) =>
  Effect.gen(function* () {
    const https = yield* isHttps
    const issuer = yield* IssuerConfig
    return htmlResponse(status, render(issuer), { ...pageHeaders(framing, { https }), ...extraHeaders })
  })

const neutral = (framing: Framing) => noticeResponse(NEUTRAL_STATUS, neutralPage, framing)

/** A lookup of a link or a document by name, under the throttle of the request's source (`LinkThrottle`). */
const guarded = <A, E, R>(
  request: HttpRequest,
  lookup: Effect.Effect<A, E, R>,
  missed: (exit: Exit.Exit<A, E>) => boolean,
) => LinkThrottle.use((throttle) => throttle.guard(request.remoteAddress, lookup, missed))

const linkInvalid = <A, E>(exit: Exit.Exit<A, E>) =>
  Option.exists(Exit.findErrorOption(exit), (error) => error instanceof LinkInvalid)

const nothingFound = <A, E>(exit: Exit.Exit<A | undefined, E>) =>
  Exit.isSuccess(exit) && exit.value === undefined

const throttled = (framing: Framing) => (error: AddressThrottled) =>
  noticeResponse(THROTTLED_STATUS, (issuer) => throttledPage(issuer, error.reason), framing, {
    "retry-after": String(error.retryAfterSeconds),
  })

const journeyLink = (link: EnrollmentLink): JourneyLink => ({
  flow: link.flow,
  ownerSlug: link.ownerSlug,
  source: link.source,
  sourceProspectId: link.sourceProspectId,
  email: link.email,
})

/** An `offered_products` link's product and cadence, when they name ones that exist. */
const preselectionOf = (link: EnrollmentLink): Preselection => ({
  product: ProductTypes.find((product): product is ProductType => product === link.product),
  cadence: Cadences.find((cadence): cadence is Cadence => cadence === link.cadence),
})

const spaced = (number: string) => number.replace(/(\d{4})(?=\d)/g, "$1 ")

/** The built-in test provider's cards, shown on the payment form when that provider takes the payments. */
const testCards = [
  { number: spaced(TEST_CARDS.ok), outcome: "Paid" },
  { number: spaced(TEST_CARDS.decline), outcome: "Declined" },
  {
    number: spaced(TEST_CARDS["fails-next-charge"]),
    outcome: "Paid now, declined on the next monthly charge",
  },
]

/** The page of `view`, with everything that depends on the request rather than the journey. */
const renderView = (
  view: JourneyView,
  link: EnrollmentLink,
  framing: Framing,
  options: {
    readonly status: number
    readonly page: StepPage
    /** The page the renter came from to change an answer (the check of their answers). */
    readonly returnTo?: StepPage | undefined
    readonly submitted?: URLSearchParams
  },
) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const crypto = yield* Crypto
    const now = yield* Clock.currentTimeMillis
    const continueUrl = followedRedirect(link, { redirectDomains: view.redirectDomains })
    const body = journeyPage(view, {
      linkPath: linkPath(link),
      page: options.page,
      pagePath: (page, returnTo) => pagePath(link, page, returnTo),
      returnTo: options.returnTo,
      formToken: issueFormToken(crypto.mac, link, now),
      parentOrigins: framing.flow === "embedded" ? framing.frameAncestors : [],
      continueUrl,
      testCards: (yield* PaymentsConfig).provider === "test" ? testCards : [],
      issuer: yield* IssuerConfig,
      ownerName: view.owner.displayName,
      submitted: options.submitted,
    })
    const headers = pageHeaders(framing, {
      https: config.enrollmentHost.startsWith("https:"),
      connects: options.page === "completed",
    })
    return htmlResponse(options.status, body, headers)
  })

/**
 * A body that could not be read, or a failure of ours, becomes a page a renter can read (framed by nobody: the
 * owner is not looked up again). What they had sent and was accepted stays accepted.
 */
const asRenterPage = <R>(effect: Effect.Effect<Response, PayloadTooLarge | BadRequest, R>) =>
  effect.pipe(
    Effect.catch((error) =>
      // The rest of an oversized body is left unread, so the connection cannot carry another request.
      error._tag === "PayloadTooLarge"
        ? noticeResponse(413, badRequestPage, noFraming, { connection: "close" })
        : noticeResponse(400, badRequestPage),
    ),
    Effect.catchCause((cause) => {
      // A dependency that did not answer is a 503 the renter may retry, and only a warning for on-call.
      const unavailable = unavailableIn(cause)
      const logged = unavailable
        ? Effect.logWarning("enrollment page failed: dependency unavailable").pipe(
            Effect.annotateLogs({ dependency: unavailable.dependency, reason: unavailable.reason }),
          )
        : Effect.logError("enrollment page failed").pipe(Effect.annotateLogs({ cause: Cause.pretty(cause) }))
      return logged.pipe(
        Effect.andThen(
          noticeResponse(
            unavailable ? 503 : 500,
            unavailablePage,
            noFraming,
            unavailable ? { "retry-after": "2" } : {},
          ),
        ),
      )
    }),
  )

/** `?return=check`: the renter came from the check of their answers to change one. */
const returnOf = (query: URLSearchParams): StepPage | undefined =>
  query.get("return") === "check" ? "check" : undefined

/**
 * The link redirects to the page of the step the renter is on; a page shows itself once the renter reached it
 * (earlier pages with the answers given), else redirects to the step's page (a journey that ended, to its end).
 */
const show = (request: HttpRequest) =>
  Effect.gen(function* () {
    const framing = yield* framingOf(request.params)
    const link = parseLink(request.params, request.query)
    const asked = request.params.page
    if (link === undefined || (asked !== undefined && !isStepPage(asked))) return yield* neutral(framing)
    return yield* guarded(
      request,
      Journey.use((journey) => journey.open(journeyLink(link), preselectionOf(link))),
      linkInvalid,
    ).pipe(
      Effect.flatMap((view) => {
        const open = openPages(view.step)
        if (asked === undefined || !open.includes(asked)) {
          return Effect.succeed(seeOther(pagePath(link, pageOfStep[view.step])))
        }
        const returnTo = returnOf(request.query)
        // The errors of the form just sent, carried here by the redirect after it (`FormState.ts`).
        return Effect.gen(function* () {
          const crypto = yield* Crypto
          const now = yield* Clock.currentTimeMillis
          const state = yield* openFormState(crypto, link, asked, request.query.get(FORM_STATE_PARAM), now)
          return yield* renderView(
            state === undefined ? view : { ...view, error: state.error },
            link,
            framing,
            {
              status: 200,
              page: asked,
              returnTo: returnTo !== undefined && open.includes(returnTo) ? returnTo : undefined,
              ...(state === undefined ? {} : { submitted: state.submitted }),
            },
          )
        })
      }),
      // The journey has logged why; the renter learns nothing of it.
      Effect.catchTag("LinkInvalid", () => neutral(framing)),
      Effect.catchTag("AddressThrottled", throttled(framing)),
    )
  })

const FORM_TYPE = "application/x-www-form-urlencoded"

/** The journey call a form answers, by the `step` it was rendered for. */
const answer = (journey: JourneyShape, link: JourneyLink, step: string | null, form: URLSearchParams) => {
  const field = (name: string) => form.get(name) ?? ""
  switch (step) {
    case "details":
      return journey.confirmDetails(link, { phone: form.get("phone") ?? undefined })
    case "underwriting":
      return journey.supplyUnderwritingInputs(link, {
        yearlyIncome: field("yearly_income"),
        employmentStatus: field("employment_status"),
        hasSsn: field("has_ssn"),
        termsAccepted: form.get("terms_accepted") === "yes",
      })
    case "choose":
      return journey.choose(link, parseChoice(form.get("choice")))
    case "quote":
      return journey.pay(link, {
        cardNumber: field("card_number"),
        expiry: field("expiry"),
        cvc: field("cvc"),
        nameOnCard: field("name_on_card"),
        postalCode: form.get("postal_code") ?? undefined,
      })
    default:
      return journey.open(link)
  }
}

const submit = (request: HttpRequest) =>
  Effect.gen(function* () {
    const framing = yield* framingOf(request.params)
    const link = parseLink(request.params, request.query)
    if (link === undefined) return yield* neutral(framing)
    const config = yield* AppConfig
    const crypto = yield* Crypto
    const now = yield* Clock.currentTimeMillis
    const contentType = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase()
    if (contentType !== FORM_TYPE) return yield* noticeResponse(400, badRequestPage, framing)
    const form = yield* Effect.flatMap(request.text, parseFormText).pipe(
      Effect.catchTag("BadRequest", () => Effect.succeed(undefined)),
    )
    if (form === undefined) return yield* noticeResponse(400, badRequestPage, framing)
    // The token depends on the link's parts alone, so this answer says nothing about the prospect.
    if (
      !postedFromThisHost(request.headers, new URL(config.enrollmentHost).origin) ||
      !formTokenValid(crypto.mac, link, form.get("csrf_token"), now)
    ) {
      return yield* noticeResponse(403, (issuer) => formRefusedPage(issuer, linkPath(link)), framing)
    }
    const step = form.get("step")
    const answered = pageOfForm(step)
    const returnTo = returnOf(request.query)
    return yield* guarded(
      request,
      Journey.use((journey) => answer(journey, journeyLink(link), step, form)),
      linkInvalid,
    ).pipe(
      Effect.flatMap((view) => {
        const open = openPages(view.step)
        if (view.error !== undefined && answered !== undefined && open.includes(answered)) {
          // Redirect-after-POST: the page's GET shows the errors and the answers, so Back and reload never send
          // the form again.
          const kept = returnTo !== undefined && open.includes(returnTo) ? returnTo : undefined
          return Effect.map(
            sealFormState(crypto, link, answered, { error: view.error, form }, now),
            (state) => seeOther(`${pagePath(link, answered, kept)}&${FORM_STATE_PARAM}=${state}`),
          )
        }
        // On to the next page (back to the check of the answers when the renter came from it), when the journey
        // allows it; else to the page of the step it is on (new answers that changed the offers: the choice). The
        // expedited flow's end is our own confirmation too, which then links to the partner.
        const wanted = returnTo ?? (answered === undefined ? undefined : nextPage(answered))
        const page = wanted !== undefined && open.includes(wanted) ? wanted : pageOfStep[view.step]
        return Effect.succeed(seeOther(pagePath(link, page)))
      }),
      // The journey has logged why; the renter learns nothing of it.
      Effect.catchTag("LinkInvalid", () => neutral(framing)),
      Effect.catchTag("AddressThrottled", throttled(framing)),
    )
  })

const serveAsset = (request: HttpRequest, asset: Asset) => {
  const current = request.query.get("v") === asset.href.split("?v=")[1]
  return htmlResponse(200, asset.body, {
    ...assetHeaders(asset.contentType),
    // A link naming this version may be kept for good; any other is revalidated.
    "cache-control": current ? "public, max-age=31536000, immutable" : "no-cache",
  })
}

/** A page of the host that depends on no link: the terms, the privacy notice; "not found" for the rest. */
const staticPage = (render: (issuer: IssuerConfigShape) => string | undefined) =>
  Effect.flatMap(Effect.service(IssuerConfig), (issuer) => {
    const body = render(issuer)
    return body === undefined ? noticeResponse(404, notFoundPage) : noticeResponse(200, () => body)
  })

const pdfHeaders = (file: string) => ({
  "content-type": "application/pdf",
  "content-disposition": `inline; filename="${file}"`,
  "cache-control": "public, max-age=31536000, immutable",
  "x-content-type-options": "nosniff",
})

/**
 * `GET /documents/<name>.zip`: a policy's document archive, the `policy_url` of `policy.documents_updated`;
 * `GET /documents/<name>/<file>.pdf`: one PDF of it, which the renter's page links. The unguessable name is the
 * only key (the spec leaves the link open); an unknown name is the host's "not found" page, which says nothing
 * more. Archives never change, so they may be cached for ever.
 */
const documentRoutes: ReadonlyArray<Route<Services>> = [
  {
    method: "GET",
    path: "/documents/:name",
    access: "public",
    handle: (request) =>
      asRenterPage(
        Effect.gen(function* () {
          const bytes = yield* guarded(
            request,
            Policies.use((policies) => policies.archive(request.params.name ?? "")),
            nothingFound,
          )
          if (bytes === undefined) return yield* noticeResponse(404, notFoundPage)
          return new FastResponse(bytes, {
            status: 200,
            headers: {
              "content-type": "application/zip",
              "content-disposition": `attachment; filename="policy-documents.zip"`,
              "cache-control": "public, max-age=31536000, immutable",
              "x-content-type-options": "nosniff",
            },
          })
        }).pipe(Effect.catchTag("AddressThrottled", throttled(noFraming))),
      ),
  },
  {
    method: "GET",
    path: "/documents/:name/:file",
    access: "public",
    handle: (request) =>
      asRenterPage(
        Effect.gen(function* () {
          const file = request.params.file ?? ""
          const bytes = yield* guarded(
            request,
            /^[A-Za-z0-9-]+\.pdf$/.test(file)
              ? Policies.use((policies) => policies.documentFile(`${request.params.name ?? ""}.zip`, file))
              : Effect.succeed(undefined),
            nothingFound,
          )
          if (bytes === undefined) return yield* noticeResponse(404, notFoundPage)
          return new FastResponse(bytes, { status: 200, headers: pdfHeaders(file) })
        }).pipe(Effect.catchTag("AddressThrottled", throttled(noFraming))),
      ),
  },
]

export const enrollmentRoutes: ReadonlyArray<Route<Services>> = [
  ...assets.map((asset): Route<Services> => ({
    method: "GET",
    path: `/enrollment/assets/${asset.name}`,
    access: "public",
    handle: (request) => Effect.succeed(serveAsset(request, asset)),
  })),
  ...(
    [
      ["/enrollment/privacy", () => privacyPage],
      ["/enrollment/terms", () => termsIndexPage],
      [
        "/enrollment/terms/:product",
        (request: HttpRequest) => (issuer: IssuerConfigShape) =>
          termsPage(issuer, request.params.product ?? "", undefined),
      ],
      [
        "/enrollment/terms/:product/:version",
        (request: HttpRequest) => (issuer: IssuerConfigShape) =>
          termsPage(issuer, request.params.product ?? "", request.params.version),
      ],
    ] as const
  ).map(([path, render]): Route<Services> => ({
    method: "GET",
    path,
    access: "public",
    answerRefusedAddress: () => asRenterPage(neutral(noFraming)),
    handle: (request) => asRenterPage(staticPage(render(request))),
  })),
  ...documentRoutes,
  ...(
    [
      ["GET", show, LINK_PATH],
      ["POST", submit, LINK_PATH],
      ["GET", show, PAGE_PATH],
      ["POST", submit, PAGE_PATH],
    ] as const
  ).map(([method, answer, path]): Route<Services> => ({
    method,
    path,
    access: "public",
    answerRefusedAddress: () => asRenterPage(neutral(noFraming)),
    handle: (request) => asRenterPage(answer(request)),
  })),
  ...(["GET", "POST"] as const).map((method): Route<Services> => ({
    method,
    path: "/enrollment/**",
    access: "public",
    answerRefusedAddress: () => asRenterPage(neutral(noFraming)),
    handle: () => asRenterPage(neutral(noFraming)),
  })),
  // The host's root and any other address: a page in the renter's pages' style, not the gateway's JSON.
  ...(["/", "/**"] as const).map((path): Route<Services> => ({
    method: "GET",
    path,
    access: "public",
    handle: () => asRenterPage(noticeResponse(404, notFoundPage)),
  })),
]

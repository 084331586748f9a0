import { mkdir } from "node:fs/promises"
import path from "node:path"
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, FrameLocator, Page } from "playwright-core"
import { gatewayPort } from "./Auth.ts"
import { launchBrowser } from "./Browser.ts"
import { anotherRenter, enrollableRenter, enrollmentService, type Renter } from "./Enrollment.ts"
import { freePort } from "./Net.ts"
import { ENROLLMENT_HOST_NAME, type ParentSites, startParentSites } from "./ParentSites.ts"

/** What the renter's enrollment in headless Chromium shares: a browser, the partner's sites, the steps a renter takes. */
export const SCREENSHOTS = path.join(process.cwd(), ".data", "screenshots", "enrollment")

/** The partner's site (an allowed frame ancestor and redirect domain) and a site the partner never registered. */
export const PARTNER = "partner.test"
export const STRANGER = "stranger.test"

/**
 * One browser for the file, the HTTPS sites in front of the service it visits, and the owner and source every
 * scenario enrolls with: framed by the partner's site, returning to it.
 */
export class E2e extends Context.Service<
  E2e,
  {
    readonly browser: BrowserContext
    readonly sites: ParentSites
    readonly first: Renter
  }
>()("test/e2e/enrollment/E2e") {
  static readonly layerAt = (port: number) =>
    Layer.effect(
      E2e,
      Effect.gen(function* () {
        const sites = yield* startParentSites({
          port,
          upstreams: { [ENROLLMENT_HOST_NAME]: yield* gatewayPort("enrollment") },
          hosts: [PARTNER, STRANGER],
        })
        const browser = yield* launchBrowser({
          hosts: [ENROLLMENT_HOST_NAME, PARTNER, STRANGER],
          acceptCertificates: true,
        })
        const first = yield* enrollableRenter("e2e", {
          frameAncestors: [sites.origin(PARTNER)],
          redirectDomains: [PARTNER],
          sourceProspectId: "p-e2e-first",
        })
        return { browser, sites, first }
      }),
    )
}

/** A new renter of the owner and source (`p-e2e-first` is the one made with them). */
export const renter = (id: string, overrides: Record<string, unknown> = {}) =>
  Effect.flatMap(Effect.service(E2e), ({ first }) =>
    id === first.sourceProspectId ? Effect.succeed(first) : anotherRenter(first, id, overrides),
  )

export const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

/** Saves the page as it looks now under `.data/screenshots/enrollment/<scenario>-<nn>-<step>.png`. */
export const screenshots = (page: Page, scenario: string) => {
  let n = 0
  return async (step: string) => {
    await mkdir(SCREENSHOTS, { recursive: true })
    n += 1
    await page.screenshot({
      path: path.join(SCREENSHOTS, `${scenario}-${String(n).padStart(2, "0")}-${step}.png`),
      fullPage: true,
    })
  }
}

export type Surface = Page | FrameLocator
export type Shot = (step: string) => Promise<void>

export const heading = (surface: Surface, text: string | RegExp) =>
  surface.getByRole("heading", { level: 1, name: text }).waitFor({ timeout: 30_000 })

/** Each step as a person answers it, with a screenshot before the answer is sent. */
export const confirmDetails = async (surface: Surface, shot: Shot) => {
  await heading(surface, "Check your details")
  await shot("details")
  await surface.getByRole("button", { name: "Confirm and continue" }).click()
}

export const answerUnderwriting = async (surface: Surface, shot: Shot, yearlyIncome: string) => {
  await heading(surface, "Your income and employment")
  await surface.getByLabel("What is your yearly income before tax?").fill(yearlyIncome)
  await surface.getByRole("radio", { name: "Employed", exact: true }).check()
  await surface
    .getByRole("group", { name: "Do you have a Social Security number?" })
    .getByLabel("Yes")
    .check()
  await surface.getByLabel(/I agree to the terms/).check()
  await shot("underwriting")
  await surface.getByRole("button", { name: "Continue" }).click()
}

export const choose = async (surface: Surface, shot: Shot, option: string) => {
  await heading(surface, "How do you want to protect your deposit?")
  await surface.getByRole("radio", { name: option }).check()
  await shot("choose")
  await surface.getByRole("button", { name: "Continue" }).click()
}

export const checkAnswers = async (surface: Surface, shot: Shot) => {
  await heading(surface, "Check your answers before paying")
  await shot("check")
  await surface.getByRole("link", { name: "Continue to payment" }).click()
}

/** The receipt's heading: insurance protects the deposit, a cash deposit is paid. */
export const COMPLETED_HEADING = /^Your (deposit is protected|cash deposit is paid)$/

/** The payment page's heading, whichever product is paid for. */
export const PAY_HEADING = /^Pay (for )?your /

export const pay = async (surface: Surface, shot: Shot, cardNumber: string) => {
  await heading(surface, PAY_HEADING)
  await surface.getByLabel("Card number").fill(cardNumber)
  await surface.getByLabel("Expiry date").fill("12/30")
  await surface.getByLabel("Security code").fill("123")
  await surface.getByLabel("Billing ZIP code").fill("62701")
  await shot("quote")
  await surface.getByRole("button", { name: /^Pay / }).click()
}

export interface Message {
  readonly origin: string
  readonly data: unknown
}

/** What the partner's page keeps (see `ParentSites`). */
export interface ParentWindow {
  readonly received: Array<Message>
}

/** The little of the DOM the tests read inside the page (the project's types have no DOM library). */
export interface PageDocument {
  readonly document: { readonly activeElement: { readonly id: string; readonly className: string } | null }
}

/** The messages the partner's page received from its frame, once the outcome is among them. */
export const messagesOf = async (page: Page) => {
  await page.waitForFunction(() =>
    (globalThis as unknown as ParentWindow).received.some((message) => typeof message.data === "string"),
  )
  return page.evaluate(() => (globalThis as unknown as ParentWindow).received)
}

/** The contract's plain-string outcomes (`completed`, `declined`, `blocked`) among the messages. */
export const outcomes = (messages: ReadonlyArray<Message>) =>
  messages.filter((message) => typeof message.data === "string")

export interface Resize {
  readonly origin: string
  readonly data: { readonly type: "enrollment.resize"; readonly height: number }
}

/** The frame's `enrollment.resize` messages, each with the page's height. */
export const resizes = (messages: ReadonlyArray<Message>) =>
  messages.filter(
    (message): message is Resize =>
      typeof message.data === "object" &&
      message.data !== null &&
      (message.data as { type?: unknown }).type === "enrollment.resize",
  )

export const framed = (sites: ParentSites, host: string, url: string) =>
  `${sites.origin(host)}/frame?src=${encodeURIComponent(url)}`

/** The expedited link with a `redirect_url`. */
export const returningTo = (url: string, redirectUrl: string) => {
  const link = new URL(url)
  link.searchParams.set("redirect_url", redirectUrl)
  return link.href
}

/** The id of the element that has focus (in the top document). */
export const focused = (page: Page) =>
  page.evaluate(() => {
    const element = (globalThis as unknown as PageDocument).document.activeElement
    return element === null ? "" : element.id || element.className
  })

export const OPTION = "Deposit insurance, paid once"

/** A phone's width and a desktop's. */
export const WIDTHS = [360, 1280] as const

/**
 * The service with its enrollment gateway behind the HTTPS sites, at a port chosen before the service starts (the
 * enrollment links carry its host and port), and the origin those links have.
 */
export const enrollmentE2e = async () => {
  const port = await freePort()
  const origin = `https://${ENROLLMENT_HOST_NAME}:${port}`
  const service = enrollmentService({ ENROLLMENT_HOST: origin })
  return { origin, layer: E2e.layerAt(port).pipe(Layer.provideMerge(service.layer)) }
}

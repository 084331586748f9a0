import { mkdir } from "node:fs/promises"
import path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, FrameLocator, Page } from "playwright-core"
import { gatewayPort } from "../support/Auth.ts"
import { accessibilityReport, assertAccessible } from "../support/Accessibility.ts"
import { launchBrowser } from "../support/Browser.ts"
import {
  anotherRenter,
  enrollableRenter,
  enrollmentService,
  getPage,
  pathOf,
  type Renter,
} from "../support/Enrollment.ts"
import { freePort } from "../support/Net.ts"
import { PROPERTY } from "../support/Prospects.ts"
import { postBatch } from "../support/Roster.ts"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { ENROLLMENT_HOST_NAME, type ParentSites, startParentSites } from "../support/ParentSites.ts"
import { awaitProspect, completeProspect, postProspect } from "../support/Prospects.ts"

const SCREENSHOTS = path.join(process.cwd(), ".data", "screenshots", "enrollment")

/** The partner's site (an allowed frame ancestor and redirect domain) and a site the partner never registered. */
const PARTNER = "partner.test"
const STRANGER = "stranger.test"

// Chosen before the service starts: the enrollment links carry this host and port.
const PORT = await freePort()
const ENROLLMENT_ORIGIN = `https://${ENROLLMENT_HOST_NAME}:${PORT}`

const service = enrollmentService({ ENROLLMENT_HOST: ENROLLMENT_ORIGIN })

/**
 * One browser for the file, the HTTPS sites in front of the service it visits, and the owner and source every
 * scenario enrolls with: framed by the partner's site, returning to it.
 */
class E2e extends Context.Service<
  E2e,
  {
    readonly browser: BrowserContext
    readonly sites: ParentSites
    readonly first: Renter
  }
>()("test/e2e/enrollment/E2e") {
  static readonly layer = Layer.effect(
    E2e,
    Effect.gen(function* () {
      const sites = yield* startParentSites({
        port: PORT,
        enrollmentPort: yield* gatewayPort("enrollment"),
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
const renter = (id: string, overrides: Record<string, unknown> = {}) =>
  Effect.flatMap(Effect.service(E2e), ({ first }) =>
    id === first.sourceProspectId ? Effect.succeed(first) : anotherRenter(first, id, overrides),
  )

const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

/** Saves the page as it looks now under `.data/screenshots/enrollment/<scenario>-<nn>-<step>.png`. */
const screenshots = (page: Page, scenario: string) => {
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

type Surface = Page | FrameLocator
type Shot = (step: string) => Promise<void>

const heading = (surface: Surface, text: string) =>
  surface.getByRole("heading", { level: 1, name: text }).waitFor({ timeout: 30_000 })

/** Each step as a person answers it, with a screenshot before the answer is sent. */
const confirmDetails = async (surface: Surface, shot: Shot) => {
  await heading(surface, "Check your details")
  await shot("details")
  await surface.getByRole("button", { name: "Confirm and continue" }).click()
}

const answerUnderwriting = async (surface: Surface, shot: Shot, yearlyIncome: string) => {
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

const choose = async (surface: Surface, shot: Shot, option: string) => {
  await heading(surface, "How do you want to protect your deposit?")
  await surface.getByRole("radio", { name: option }).check()
  await shot("choose")
  await surface.getByRole("button", { name: "Continue" }).click()
}

const checkAnswers = async (surface: Surface, shot: Shot) => {
  await heading(surface, "Check your answers before paying")
  await shot("check")
  await surface.getByRole("link", { name: "Continue to payment" }).click()
}

const pay = async (surface: Surface, shot: Shot, cardNumber: string) => {
  await heading(surface, "Your quote")
  await surface.getByLabel("Card number").fill(cardNumber)
  await surface.getByLabel("Expiry date").fill("12/30")
  await surface.getByLabel("Security code").fill("123")
  await surface.getByLabel("Billing ZIP code").fill("62701")
  await shot("quote")
  await surface.getByRole("button", { name: /^Pay / }).click()
}

interface Message {
  readonly origin: string
  readonly data: unknown
}

/** What the partner's page keeps (see `ParentSites`). */
interface ParentWindow {
  readonly received: Array<Message>
}

/** The little of the DOM the tests read inside the page (the project's types have no DOM library). */
interface PageDocument {
  readonly document: { readonly activeElement: { readonly id: string; readonly className: string } | null }
}

/** The messages the partner's page received from its frame, once the outcome is among them. */
const messagesOf = async (page: Page) => {
  await page.waitForFunction(() =>
    (globalThis as unknown as ParentWindow).received.some((message) => typeof message.data === "string"),
  )
  return page.evaluate(() => (globalThis as unknown as ParentWindow).received)
}

/** The contract's plain-string outcomes (`completed`, `declined`, `blocked`) among the messages. */
const outcomes = (messages: ReadonlyArray<Message>) =>
  messages.filter((message) => typeof message.data === "string")

interface Resize {
  readonly origin: string
  readonly data: { readonly type: "enrollment.resize"; readonly height: number }
}

/** The frame's `enrollment.resize` messages, each with the page's height. */
const resizes = (messages: ReadonlyArray<Message>) =>
  messages.filter(
    (message): message is Resize =>
      typeof message.data === "object" &&
      message.data !== null &&
      (message.data as { type?: unknown }).type === "enrollment.resize",
  )

const framed = (sites: ParentSites, host: string, url: string) =>
  `${sites.origin(host)}/frame?src=${encodeURIComponent(url)}`

/** The expedited link with a `redirect_url`. */
const returningTo = (url: string, redirectUrl: string) => {
  const link = new URL(url)
  link.searchParams.set("redirect_url", redirectUrl)
  return link.href
}

/** The id of the element that has focus (in the top document). */
const focused = (page: Page) =>
  page.evaluate(() => {
    const element = (globalThis as unknown as PageDocument).document.activeElement
    return element === null ? "" : element.id || element.className
  })

const OPTION = "Deposit insurance, paid once"

/** A phone's width and a desktop's. */
const WIDTHS = [360, 1280] as const

describe("the renter's enrollment in headless Chromium", () => {
  layer(E2e.layer.pipe(Layer.provideMerge(service.layer)), { excludeTestServices: true, timeout: 300_000 })(
    (it) => {
      it.effect("completes the embedded flow inside the partner's page, which is told `completed`", () =>
        Effect.gen(function* () {
          const { browser, sites } = yield* E2e
          const { enrollmentUrl } = yield* renter("p-e2e-first")
          const page = yield* promise(() => browser.newPage())
          const shot = screenshots(page, "embedded")
          yield* promise(() => page.goto(framed(sites, PARTNER, enrollmentUrl)))
          const frame = page.frameLocator("#enrollment")
          yield* promise(async () => {
            await confirmDetails(frame, shot)
            await answerUnderwriting(frame, shot, "95000")
            await choose(frame, shot, OPTION)
            await checkAnswers(frame, shot)
            // A declined card keeps the renter on the quote, with the error at the top.
            await pay(frame, shot, TEST_CARDS.decline)
            await frame
              .getByRole("alert")
              .getByText(/declined/i)
              .waitFor()
            await shot("card-declined")
            await pay(frame, shot, TEST_CARDS.ok)
            await heading(frame, "Your deposit is protected")
            await shot("completed")
          })
          const messages = yield* promise(() => messagesOf(page))
          assert.deepStrictEqual(outcomes(messages), [{ origin: ENROLLMENT_ORIGIN, data: "completed" }])
          const heights = resizes(messages)
          assert.isNotEmpty(heights, "the frame's height was posted")
          for (const message of heights) {
            assert.strictEqual(message.origin, ENROLLMENT_ORIGIN)
            assert.isAbove(message.data.height, 0)
          }
          yield* promise(() => page.close())
        }),
      )

      it.effect("tells the partner's page `declined` when the renter's answers leave nothing to offer", () =>
        Effect.gen(function* () {
          const { browser, sites } = yield* E2e
          // No deposit to pay in cash: deposit insurance is the only product this renter could be offered.
          const { enrollmentUrl } = yield* renter("p-e2e-declined", { deposit_amount_cents: 0 })
          const page = yield* promise(() => browser.newPage())
          const shot = screenshots(page, "declined")
          yield* promise(() => page.goto(framed(sites, PARTNER, enrollmentUrl)))
          const frame = page.frameLocator("#enrollment")
          yield* promise(async () => {
            await confirmDetails(frame, shot)
            // Less than deposit insurance asks of the rent ($2,000 a month): nothing is left to offer.
            await answerUnderwriting(frame, shot, "10000")
            await heading(frame, "We cannot offer this protection")
            await shot("declined")
            await assertAccessible(page.frame({ url: /\/enrollment\// })!, "the framed declined page")
          })
          const messages = yield* promise(() => messagesOf(page))
          assert.deepStrictEqual(outcomes(messages), [{ origin: ENROLLMENT_ORIGIN, data: "declined" }])
          yield* promise(() => page.close())
        }),
      )

      it.effect("cannot be framed by a site the owner did not list", () =>
        Effect.gen(function* () {
          const { browser, sites } = yield* E2e
          const { enrollmentUrl } = yield* renter("p-e2e-stranger")
          const page = yield* promise(() => browser.newPage())
          const refusals: Array<string> = []
          page.on("console", (message) => {
            if (/frame-ancestors/.test(message.text())) refusals.push(message.text())
          })
          const refused = page.waitForEvent("console", {
            predicate: (message) => /frame-ancestors/.test(message.text()),
            timeout: 30_000,
          })
          yield* promise(() => page.goto(framed(sites, STRANGER, enrollmentUrl)))
          yield* promise(() => refused)
          yield* promise(() => screenshots(page, "stranger")("frame-refused"))
          assert.include(
            refusals[0] ?? "",
            ENROLLMENT_ORIGIN,
            "the browser refused to frame the enrollment page",
          )
          const shown = yield* promise(() =>
            page.frameLocator("#enrollment").getByRole("heading", { name: "Check your details" }).count(),
          )
          assert.strictEqual(shown, 0, "the stranger's page shows none of the enrollment")
          yield* promise(() => page.close())
        }),
      )

      it.effect("shows the neutral page for a wrong email, in the partner's frame and on its own", () =>
        Effect.gen(function* () {
          const { browser, sites } = yield* E2e
          const { enrollmentUrl } = yield* renter("p-e2e-first")
          const wrong = new URL(enrollmentUrl)
          wrong.searchParams.set("email", "someone.else@example.com")
          const page = yield* promise(() => browser.newPage())
          const shot = screenshots(page, "wrong-email")
          yield* promise(async () => {
            await page.goto(framed(sites, PARTNER, wrong.href))
            await heading(page.frameLocator("#enrollment"), "This link is not valid")
            await shot("framed")
            await page.goto(wrong.href)
            await heading(page, "This link is not valid")
            await shot("alone")
          })
          const text = yield* promise(() => page.locator("main").innerText())
          assert.notInclude(text, "John")
          yield* promise(() => page.close())
        }),
      )

      it.effect("returns the renter to an allowlisted redirect_url at the end of the expedited flow", () =>
        Effect.gen(function* () {
          const { browser, sites } = yield* E2e
          const { hostedEnrollmentUrl } = yield* renter("p-e2e-return")
          const back = `${sites.origin(PARTNER)}/return?from=enrollment`
          const page = yield* promise(() => browser.newPage())
          const shot = screenshots(page, "expedited")
          yield* promise(async () => {
            await page.setViewportSize({ width: 360, height: 740 })
            await page.goto(returningTo(hostedEnrollmentUrl, back))
            await heading(page, "Check your details")
            await shot("details")
            // The keyboard alone: the skip link, the phone number, then the button.
            await page.keyboard.press("Tab")
            assert.strictEqual(await focused(page), "skip-link")
            await page.keyboard.press("Tab")
            assert.strictEqual(await focused(page), "phone")
            await page.keyboard.press("Tab")
            await page.keyboard.press("Enter")
            // Sent without an income: the error summary takes focus, and its link moves focus to the field.
            await heading(page, "Your income and employment")
            await page.getByLabel("What is your yearly income before tax?").fill("")
            await page.getByRole("button", { name: "Continue" }).click()
            await page.getByRole("alert").waitFor()
            assert.strictEqual(await focused(page), "error-summary")
            await shot("underwriting-errors")
            await page.getByRole("alert").getByRole("link").first().click()
            assert.strictEqual(await focused(page), "yearly-income")
            await answerUnderwriting(page, shot, "95000")
            await choose(page, shot, OPTION)
            await checkAnswers(page, shot)
            await pay(page, shot, TEST_CARDS.ok)
            // Our confirmation first: the policy number, what is covered, the documents; then the partner's page.
            await heading(page, "Your deposit is protected")
            await page.getByText(/^SDI-\d{4}-\d{6}$/).waitFor()
            await shot("completed")
            assert.notInclude(sites.visits(), back, "the renter has not left yet")
            await page.getByRole("link", { name: `Continue to ${PARTNER}` }).click()
            await page.waitForURL(back, { timeout: 30_000 })
            await heading(page, "Back at the partner")
            await shot("returned")
          })
          assert.include(sites.visits(), back)
          yield* promise(() => page.close())
        }),
      )

      it.effect("ignores a redirect_url on a domain the source did not allow", () =>
        Effect.gen(function* () {
          const { browser, sites } = yield* E2e
          const { hostedEnrollmentUrl } = yield* renter("p-e2e-stay")
          const elsewhere = `${sites.origin(STRANGER)}/return?from=enrollment`
          const page = yield* promise(() => browser.newPage())
          const shot = screenshots(page, "expedited-other-domain")
          yield* promise(async () => {
            await page.setViewportSize({ width: 360, height: 740 })
            await page.goto(returningTo(hostedEnrollmentUrl, elsewhere))
            await confirmDetails(page, shot)
            await answerUnderwriting(page, shot, "95000")
            await choose(page, shot, OPTION)
            await checkAnswers(page, shot)
            await pay(page, shot, TEST_CARDS.ok)
            await heading(page, "Your deposit is protected")
            await shot("completed")
          })
          assert.isTrue(page.url().startsWith(`${ENROLLMENT_ORIGIN}/enrollment/expedited/`), page.url())
          assert.strictEqual(
            yield* promise(() => page.getByRole("link", { name: /^Continue to/ }).count()),
            0,
          )
          assert.notInclude(sites.visits(), elsewhere, "the browser never went to the other domain")
          yield* promise(() => page.close())
        }),
      )

      it.effect("finds a page's accessibility problems when it has some (the check can fail)", () =>
        Effect.gen(function* () {
          const { browser } = yield* E2e
          const page = yield* promise(() => browser.newPage())
          const report = yield* promise(async () => {
            await page.setContent(
              `<html><body><img src="x.png"><p id="twice">a</p><p id="twice">b</p></body></html>`,
            )
            return accessibilityReport(page)
          })
          assert.deepStrictEqual(report.duplicateIds, ["twice"])
          const rules = report.violations.map((violation) => violation.rule)
          for (const rule of ["image-alt", "html-has-lang", "document-title"]) assert.include(rules, rule)
          yield* promise(() => page.close())
        }),
      )

      for (const width of [360, 1280]) {
        it.effect(
          `at ${width} px, every page has unique ids and no axe-core violation, and an expiry typed 1229 pays`,
          () =>
            Effect.gen(function* () {
              const { browser } = yield* E2e
              const { hostedEnrollmentUrl } = yield* renter(`p-e2e-pages-${width}`)
              const page = yield* promise(() => browser.newPage())
              const shot = screenshots(page, `pages-${width}`)
              // A screenshot and the checks of the page as the renter sees it now.
              const seen = async (step: string) => {
                await shot(step)
                await assertAccessible(page, `${width} px: ${step}`)
              }
              const alert = () => page.getByRole("alert").waitFor()
              const pdfs: Array<string> = []
              const continueButton = () => page.getByRole("button", { name: "Continue" }).click()
              // Monthly on the phone, once on the desktop: both confirmations are seen.
              const option =
                width === 360 ? "Deposit insurance, paid monthly" : "Deposit insurance, paid once"
              yield* promise(async () => {
                await page.setViewportSize({ width, height: width === 360 ? 740 : 900 })
                await page.goto(hostedEnrollmentUrl)
                await heading(page, "Check your details")
                await page.getByText("Step 1 of 4").waitFor()
                await seen("details")
                await page.getByLabel("Phone number").fill("")
                await page.getByRole("button", { name: "Confirm and continue" }).click()
                await alert()
                await page.getByRole("alert").getByText("Enter your phone number").waitFor()
                await seen("details-errors")
                await page.getByLabel("Phone number").fill("5559876543")
                await page.getByRole("button", { name: "Confirm and continue" }).click()

                await heading(page, "Your income and employment")
                await seen("underwriting")
                await page.getByLabel("What is your yearly income before tax?").fill("")
                await continueButton()
                await alert()
                await seen("underwriting-errors")
                await answerUnderwriting(page, async () => {}, "95000")

                await heading(page, "How do you want to protect your deposit?")
                await seen("choose")
                await page.getByRole("radio", { name: option }).check()
                await continueButton()

                await heading(page, "Check your answers before paying")
                await seen("check")
                await page.getByRole("link", { name: "Continue to payment" }).click()

                await heading(page, "Your quote")
                await seen("quote")
                await page.getByRole("button", { name: /^Pay / }).click()
                await alert()
                await page.getByRole("alert").getByText("Enter your card number").waitFor()
                await seen("quote-errors")
                await pay(page, async () => {}, TEST_CARDS.decline)
                await alert()
                await page
                  .getByRole("alert")
                  .getByText(/pay with another card/)
                  .waitFor()
                await seen("card-declined")

                await page.getByLabel("Card number").fill(TEST_CARDS.ok)
                const expiry = page.getByLabel("Expiry date")
                await expiry.fill("")
                // Typed key by key, as on a phone's numeric keypad: the page writes the "/".
                await expiry.pressSequentially("1229")
                assert.strictEqual(await expiry.inputValue(), "12/29")
                await page.getByLabel("Security code").fill("123")
                await page.getByRole("button", { name: /^Pay / }).click()
                await heading(page, "Your deposit is protected")
                // The documents follow the payment: the page shows each PDF once they are stored.
                const declaration = page.getByRole("link", { name: "Policy declaration (PDF)" })
                for (let tries = 0; (await declaration.count()) === 0 && tries < 60; tries++) {
                  await page.waitForTimeout(500)
                  await page.reload()
                }
                await seen("completed")
                if (width === 360) await page.getByText("Next payment").waitFor()
                for (const name of ["Policy declaration (PDF)", "Certificate of coverage (PDF)"]) {
                  pdfs.push((await page.getByRole("link", { name }).getAttribute("href"))!)
                }

                const elsewhere = {
                  terms: ["/enrollment/terms/security_deposit_insurance", "Deposit insurance: terms"],
                  "terms-index": ["/enrollment/terms", "Terms"],
                  privacy: ["/enrollment/privacy", "Privacy notice"],
                  root: ["/", "Page not found"],
                  "unknown-document": [`/documents/${"a".repeat(43)}.zip`, "Page not found"],
                } as const
                for (const [step, [address, title]] of Object.entries(elsewhere)) {
                  await page.goto(`${ENROLLMENT_ORIGIN}${address}`)
                  await heading(page, title)
                  await seen(step)
                }
                const wrong = new URL(hostedEnrollmentUrl)
                wrong.searchParams.set("email", "someone.else@example.com")
                await page.goto(wrong.href)
                await heading(page, "This link is not valid")
                await seen("link-not-valid")
              })
              // The terminal pages that end without a policy: nothing left to offer, and a building that left.
              const declined = yield* renter(`p-e2e-pages-declined-${width}`, { deposit_amount_cents: 0 })
              yield* promise(async () => {
                await page.goto(declined.hostedEnrollmentUrl)
                await heading(page, "Check your details")
                await page.getByRole("button", { name: "Confirm and continue" }).click()
                await answerUnderwriting(page, async () => {}, "10000")
                await heading(page, "We cannot offer this protection")
                await seen("declined")
              })
              const leaving = yield* enrollableRenter(`e2e-pages-blocked-${width}`, { flow: "expedited" })
              yield* promise(async () => {
                await page.goto(leaving.hostedEnrollmentUrl)
                await heading(page, "Check your details")
                await page.getByRole("button", { name: "Confirm and continue" }).click()
                await heading(page, "Your income and employment")
              })
              yield* postBatch(leaving.partner, leaving.slug, "properties", [{ ...PROPERTY, active: false }])
              yield* promise(async () => {
                await page.reload()
                await heading(page, "You cannot continue online")
                await seen("blocked")
              })
              assert.lengthOf(pdfs, 2)
              for (const pdf of pdfs) {
                const answer = yield* getPage(pathOf(new URL(pdf, ENROLLMENT_ORIGIN).href))
                assert.strictEqual(answer.status, 200, pdf)
                assert.strictEqual(answer.headers.get("content-type"), "application/pdf", pdf)
              }
              yield* promise(() => page.close())
            }),
        )
      }

      for (const width of WIDTHS) {
        it.effect(`sells a renter with a low income every product it offers, at ${width} px`, () =>
          Effect.gen(function* () {
            const { browser } = yield* E2e
            const offered = yield* promise(async () => {
              const page = await browser.newPage()
              await page.setViewportSize({ width, height: 800 })
              return page
            })
            const first = yield* renter(`p-e2e-low-${width}-0`)
            const options = yield* promise(async () => {
              const shot = screenshots(offered, `low-income-${width}`)
              await offered.goto(first.enrollmentUrl)
              await confirmDetails(offered, shot)
              await answerUnderwriting(offered, shot, "10000")
              await heading(offered, "How do you want to protect your deposit?")
              await shot("choose")
              return offered
                .getByRole("radio")
                .evaluateAll((radios) =>
                  radios.map((radio) =>
                    (
                      radio as unknown as { readonly labels: Array<{ textContent: string }> }
                    ).labels[0]!.textContent.trim(),
                  ),
                )
            })
            assert.isNotEmpty(options)
            assert.notMatch(options.join(" | "), /insurance|guarantee/i, "only what $10,000 a year passes")
            yield* promise(() => offered.close())
            for (const [n, option] of options.entries()) {
              const { enrollmentUrl } = yield* renter(`p-e2e-low-${width}-${n + 1}`)
              const page = yield* promise(() => browser.newPage())
              yield* promise(async () => {
                const shot = screenshots(page, `low-income-${width}-${n + 1}`)
                await page.setViewportSize({ width, height: 800 })
                await page.goto(enrollmentUrl)
                await confirmDetails(page, shot)
                await answerUnderwriting(page, shot, "10000")
                await choose(page, shot, option)
                await checkAnswers(page, shot)
                await pay(page, shot, TEST_CARDS.ok)
                await heading(page, "Your deposit is protected")
                await shot("completed")
                await page.close()
              })
            }
          }),
        )

        it.effect(
          `returns the renter to the choice when a product is refused after choosing, at ${width} px`,
          () =>
            Effect.gen(function* () {
              const { browser, first } = yield* E2e
              const id = `p-e2e-refused-${width}`
              const email = `${id}@example.com`
              const { enrollmentUrl } = yield* renter(id, { email })
              const page = yield* promise(() => browser.newPage())
              const shot = screenshots(page, `refused-${width}`)
              yield* promise(async () => {
                await page.setViewportSize({ width, height: 800 })
                await page.goto(enrollmentUrl)
                await confirmDetails(page, shot)
                await answerUnderwriting(page, shot, "95000")
                await heading(page, "How do you want to protect your deposit?")
              })
              // The partner's screening result turns to denied after the renter answered.
              yield* postProspect(
                first.partner,
                first.slug,
                completeProspect(first.source, id, { email, screening_result: "denied" }),
              )
              yield* awaitProspect(
                first.partner,
                first.slug,
                first.source,
                id,
                (p) => ((p.sdi_ineligibility_reasons as Array<string> | undefined) ?? []).length > 0,
              )
              yield* promise(async () => {
                await choose(page, shot, OPTION)
                await heading(page, "How do you want to protect your deposit?")
                await page.getByText(/We cannot offer you deposit insurance after all/).waitFor()
                await page.getByText(/rental screening/).waitFor()
                await shot("refused")
                await assertAccessible(page, `${width} px: refused`)
                assert.strictEqual(await page.getByRole("radio", { name: /Deposit insurance/ }).count(), 0)
                const remaining = await page.getByRole("radio").count()
                assert.isAbove(remaining, 0, "the other offers stay")
                await page.getByRole("radio").first().check()
                await page.getByRole("button", { name: "Continue" }).click()
                await checkAnswers(page, shot)
                await pay(page, shot, TEST_CARDS.ok)
                await heading(page, "Your deposit is protected")
                await shot("completed")
                await page.close()
              })
            }),
        )

        it.effect(`goes Back and changes answers from the check of the answers, at ${width} px`, () =>
          Effect.gen(function* () {
            const { browser } = yield* E2e
            const { enrollmentUrl } = yield* renter(`p-e2e-back-${width}`)
            const page = yield* promise(() => browser.newPage())
            const shot = screenshots(page, `back-${width}`)
            yield* promise(async () => {
              await page.setViewportSize({ width, height: 800 })
              await page.goto(enrollmentUrl)
              await heading(page, "Check your details")
              await page.getByLabel("Phone number").fill("5551112222")
              await confirmDetails(page, shot)
              await answerUnderwriting(page, shot, "95000")
              await heading(page, "How do you want to protect your deposit?")
              // The browser's Back: the income page, with the answers given.
              await page.goBack()
              await heading(page, "Your income and employment")
              assert.strictEqual(
                await page.getByLabel("What is your yearly income before tax?").inputValue(),
                "95000",
              )
              assert.isTrue(await page.getByRole("radio", { name: "Employed", exact: true }).isChecked())
              await shot("browser-back")
              // The page's Back link: the details, with the corrected phone.
              await page.getByRole("link", { name: "Back", exact: true }).click()
              await heading(page, "Check your details")
              assert.strictEqual(await page.getByLabel("Phone number").inputValue(), "5551112222")
              await shot("back-link")
              await assertAccessible(page, `${width} px: details after Back`)
              await confirmDetails(page, shot)
              await heading(page, "Your income and employment")
              assert.strictEqual(
                await page.getByLabel("What is your yearly income before tax?").inputValue(),
                "95000",
              )
              await page.getByRole("button", { name: "Continue" }).click()
              await choose(page, shot, OPTION)
              await heading(page, "Check your answers before paying")
              const answers = await page.locator("main").innerText()
              assert.include(answers, "5551112222")
              assert.include(answers, "$95,000")
              assert.strictEqual(await page.getByRole("link", { name: /^Change/ }).count(), 6)
              await shot("check")
              await assertAccessible(page, `${width} px: check`)
              // A lower income from the check of the answers: the offers follow it.
              await page.getByRole("link", { name: "Change yearly income" }).click()
              await heading(page, "Your income and employment")
              await page.getByLabel("What is your yearly income before tax?").fill("10000")
              await shot("change-income")
              await page.getByRole("button", { name: "Continue" }).click()
              await heading(page, "How do you want to protect your deposit?")
              assert.strictEqual(await page.getByRole("radio", { name: /Deposit insurance/ }).count(), 0)
              await shot("offers-followed")
              await page.getByRole("radio").first().check()
              await page.getByRole("button", { name: "Continue" }).click()
              await heading(page, "Check your answers before paying")
              assert.include(await page.locator("main").innerText(), "$10,000")
              await checkAnswers(page, shot)
              await pay(page, shot, TEST_CARDS.ok)
              await heading(page, "Your deposit is protected")
              await page.close()
            })
          }),
        )
      }
    },
  )
})

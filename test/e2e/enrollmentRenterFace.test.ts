import { mkdir } from "node:fs/promises"
import path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Frame, Page } from "playwright-core"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { assertAccessible } from "../support/Accessibility.ts"
import { gatewayPort } from "../support/Auth.ts"
import { enrollableRenter, getPage, pathOf } from "../support/Enrollment.ts"
import {
  answerUnderwriting,
  COMPLETED_HEADING,
  E2e,
  enrollmentE2e,
  heading,
  type Message,
  PARTNER,
  PAY_HEADING,
  promise,
  renter,
  resizes,
  screenshots,
  WIDTHS,
} from "../support/EnrollmentBrowser.ts"

/**
 * The renter's pages, each of these checked in Chromium at 360 and 1280 px and inside a partner's
 * frame (600 px wide on a desktop, the phone's width on a phone), with axe-core on every state:
 * 1. each page opens at its heading inside the frame (`enrollment.scroll`, focus), heights without jumps;
 * 2. a form's errors come by redirect-after-POST, so Back and reload never send it again;
 * 3. the choice says why each product is not offered;
 * 5. the pay page's wording, optional mark, heading and step counts;
 * 4. the receipt says what was bought (insurance, or a cash deposit and who holds it) and when it was paid;
 * 6. the documents appear on the receipt by themselves, tagged PDFs naming the insurer's address and licence and
 *    the premium, and the terms say how to cancel and what is refunded;
 * 7. the phone formatted, emails that wrap at the phone's width, the owner's name in the header.
 */

const { origin: ENROLLMENT_ORIGIN, layer: e2e } = await enrollmentE2e()

/** A long address, to see it wrap at a phone's width. */
const LONG_EMAIL = (id: string) => `${id}.with.a.rather.long.name@renters-of-example-property-management.com`

/** The partner's page as a partner following docs/enrollment.md writes it: it sizes and scrolls its frame. */
const PARTNER_SCRIPT = `
if (window.top === window) {
  window.addEventListener("message", (event) => {
    const frame = document.getElementById("enrollment")
    const data = event.data
    if (!frame || !data || typeof data !== "object") return
    if (data.type === "enrollment.resize") frame.style.height = data.height + "px"
    if (data.type === "enrollment.scroll") {
      window.scrollTo(0, frame.getBoundingClientRect().top + window.scrollY + data.top)
    }
  })
}`

/** The little of the DOM read inside the pages (the project's types have no DOM library). */
interface InPage {
  readonly document: {
    readonly activeElement: { readonly tagName: string; readonly className: string } | null
    readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number }
  }
  readonly received: Array<Message>
}

const activeElement = (target: Page | Frame) =>
  target.evaluate(() => {
    const active = (globalThis as unknown as InPage).document.activeElement
    return active === null ? "" : `${active.tagName.toLowerCase()}.${active.className}`
  })

/** The page's content height, measured as the page's script measures it. */
const contentHeight = (frame: Frame) =>
  frame.evaluate(() => {
    const inPage = globalThis as unknown as {
      document: {
        body: {
          children: Iterable<{
            tagName: string
            getBoundingClientRect: () => { bottom: number; height: number; width: number }
          }>
        }
      }
      getComputedStyle: (element: unknown) => { marginBottom: string }
      scrollY: number
    }
    let bottom = 0
    for (const child of inPage.document.body.children) {
      if (child.tagName === "SCRIPT") continue
      const box = child.getBoundingClientRect()
      if (box.height === 0 && box.width === 0) continue
      const margin = parseFloat(inPage.getComputedStyle(child).marginBottom) || 0
      bottom = Math.max(bottom, box.bottom + inPage.scrollY + margin)
    }
    return Math.ceil(bottom)
  })

const horizontalOverflow = (target: Page | Frame) =>
  target.evaluate(() => {
    const root = (globalThis as unknown as InPage).document.documentElement
    return root.scrollWidth - root.clientWidth
  })

const scrolls = (messages: ReadonlyArray<Message>) =>
  messages.filter(
    (message) =>
      typeof message.data === "object" &&
      message.data !== null &&
      (message.data as { type?: unknown }).type === "enrollment.scroll",
  )

/** The receipt's documents section while they are being made, as `EndPages.ts` renders it. */
const PENDING_DOCUMENTS =
  '<div id="documents" data-refresh="documents" aria-live="polite"><h2>Your documents</h2>' +
  "<p>Your documents are being prepared. They appear here in a minute.</p></div>"

/** The screenshot of a renter step inside a partner's frame that docs/enrollment.md shows. */
const VIEWPORT_HEIGHT = 700

const DOCS_IMAGE = path.join(process.cwd(), "docs", "images", "renter-step-in-frame.png")
/** `DOCS_SCREENSHOTS=1 npm test -- test/e2e/enrollmentRenterFace.test.ts` renews it; a plain run leaves docs/ alone. */
const RENEW_DOCS_IMAGE = process.env.DOCS_SCREENSHOTS === "1"

describe("the renter's pages in a partner's frame and on their own", () => {
  layer(e2e, { excludeTestServices: true, timeout: 300_000 })((it) => {
    for (const width of WIDTHS) {
      const frameWidth = width === 360 ? 360 : 600
      it.effect(
        `in a ${frameWidth} px frame at ${width} px, each page opens at its heading with focus on it, and the frame's heights never jump past the content`,
        () =>
          Effect.gen(function* () {
            const { browser, sites } = yield* E2e
            const { enrollmentUrl } = yield* renter(`p-face-frame-${width}`)
            const page = yield* promise(() => browser.newPage())
            const shot = screenshots(page, `face-frame-${width}`)
            yield* promise(async () => {
              await page.setViewportSize({ width, height: VIEWPORT_HEIGHT })
              await page.addInitScript(PARTNER_SCRIPT)
              await page.goto(
                `${sites.origin(PARTNER)}/frame?width=${frameWidth}&src=${encodeURIComponent(enrollmentUrl)}`,
              )
              const frame = (await (await page.waitForSelector("#enrollment")).contentFrame())!
              const surface = page.frameLocator("#enrollment")
              const heights: Array<number> = []
              /** The new page's heading is inside the parent's viewport and has focus (or the errors do). */
              const opensAtTop = async (title: string | RegExp, step: string, focus = "h1") => {
                await heading(surface, title)
                await page.waitForFunction(
                  (type) =>
                    (globalThis as unknown as InPage).received.filter(
                      (m) => typeof m.data === "object" && (m.data as { type?: string }).type === type,
                    ).length > 0,
                  "enrollment.scroll",
                )
                // The partner's page scrolls when the message arrives: wait until the start is on screen.
                const target = focus === "h1" ? surface.locator("main h1") : surface.locator(".error-summary")
                const onScreen = async () => {
                  const box = (await target.boundingBox())!
                  return box.y >= -1 && box.y + box.height <= VIEWPORT_HEIGHT
                }
                for (let tries = 0; !(await onScreen()) && tries < 50; tries++) await page.waitForTimeout(100)
                assert.isTrue(await onScreen(), `${step}: the start is inside the visible area`)
                assert.match(await activeElement(frame), new RegExp(`^${focus}`), `${step}: focus`)
                heights.push(await contentHeight(frame))
                await shot(step)
                if (RENEW_DOCS_IMAGE && width === 1280 && step === "check") {
                  await mkdir(path.dirname(DOCS_IMAGE), { recursive: true })
                  await page.screenshot({ path: DOCS_IMAGE })
                }
                await assertAccessible(frame, `${width} px framed: ${step}`)
                // Scrolled down to the button, as a renter is when they send the page.
                await page.evaluate(() =>
                  (globalThis as unknown as { scrollTo: (x: number, y: number) => void }).scrollTo(
                    0,
                    100_000,
                  ),
                )
              }
              const received = () => page.evaluate(() => (globalThis as unknown as InPage).received)
              const allMessages: Array<Message> = []
              const reset = async () => {
                allMessages.push(
                  ...(await page.evaluate(() => (globalThis as unknown as InPage).received.splice(0))),
                )
              }

              await heading(surface, "Check your details")
              await opensAtTop("Check your details", "details")
              await reset()
              await surface.getByRole("button", { name: "Confirm and continue" }).click()
              await opensAtTop("Your income and employment", "income")
              await reset()
              await answerUnderwriting(surface, async () => {}, "95000")
              await opensAtTop("How do you want to protect your deposit?", "choose")
              await reset()
              await surface.getByRole("radio", { name: "Deposit insurance, paid once" }).check()
              await surface.getByRole("button", { name: "Continue" }).click()
              await opensAtTop("Check your answers before paying", "check")
              await reset()
              await surface.getByRole("link", { name: "Continue to payment" }).click()
              await opensAtTop(PAY_HEADING, "pay")
              await reset()
              // A mistyped card: the errors open at the top, with focus on them.
              await surface.getByLabel("Card number").fill("4242 4242 4242 4241")
              await surface.getByLabel("Expiry date").fill("12/30")
              await surface.getByLabel("Security code").fill("123")
              await surface.getByRole("button", { name: /^Pay / }).click()
              await surface.getByRole("alert").getByText("This card number is not valid").waitFor()
              await opensAtTop(PAY_HEADING, "pay-errors", "div.error-summary")
              const messages = await received()
              const scroll = scrolls(messages)
              assert.isNotEmpty(scroll)
              for (const message of scroll) assert.strictEqual(message.origin, new URL(enrollmentUrl).origin)
              await reset()
              await surface.getByLabel("Card number").fill(TEST_CARDS.ok)
              await surface.getByLabel("Security code").fill("123")
              await surface.getByRole("button", { name: /^Pay / }).click()
              await heading(surface, /is protected|deposit is paid|You have paid/)
              await reset()
              const all = resizes(allMessages)
              assert.isNotEmpty(all)
              const tallest = Math.max(...heights, await contentHeight(frame))
              for (const message of all) {
                assert.isAtMost(message.data.height, tallest + 1, "never more than a page's content")
              }
              await page.close()
            })
          }),
      )

      it.effect(
        `at ${width} px, a form's errors survive Back and reload without sending it again, and the pay page reads right`,
        () =>
          Effect.gen(function* () {
            const { browser } = yield* E2e
            const id = `p-face-forms-${width}`
            const email = LONG_EMAIL(id)
            const { enrollmentUrl } = yield* renter(id, { email })
            const page = yield* promise(() => browser.newPage())
            const shot = screenshots(page, `face-forms-${width}`)
            const seen = async (step: string) => {
              await shot(step)
              await assertAccessible(page, `${width} px: ${step}`)
              assert.isAtMost(await horizontalOverflow(page), 0, `${step}: nothing wider than the screen`)
            }
            yield* promise(async () => {
              await page.setViewportSize({ width, height: 800 })
              await page.goto(enrollmentUrl)
              await heading(page, "Check your details")
              // 7: the owner's name in the header, the phone as people write it, the email wrapping cleanly.
              assert.match(await page.locator("header").innerText(), /Offered by Owner /)
              assert.strictEqual(await page.getByLabel("Phone number").inputValue(), "(555) 987-6543")
              const shownEmail = page.locator(".summary-list__value .email")
              assert.strictEqual((await shownEmail.innerText()).replace(/\s/g, ""), email)
              assert.isAbove(await shownEmail.locator("wbr").count(), 2, "it may wrap before its dots and @")
              await seen("details")
              await page.getByLabel("Phone number").fill("555 201 33")
              await page.getByRole("button", { name: "Confirm and continue" }).click()
              await page.getByRole("alert").waitFor()
              // 2: the errors are a GET of the page; reload shows them again and sends nothing.
              assert.match(page.url(), /\/details\?.*&state=/)
              assert.notInclude(page.url(), "555")
              const reloaded = (await page.reload())!
              assert.strictEqual(reloaded.request().method(), "GET")
              await page.getByRole("alert").waitFor()
              assert.strictEqual(await page.getByLabel("Phone number").inputValue(), "555 201 33")
              await seen("details-errors")
              await page.getByLabel("Phone number").fill("5552013344")
              await page.getByRole("button", { name: "Confirm and continue" }).click()
              await heading(page, "Your income and employment")
              // Back from the next page: the page with the errors, fetched again by GET.
              const back = (await page.goBack())!
              assert.strictEqual(back.request().method(), "GET")
              await heading(page, "Check your details")
              await seen("details-after-back")
              await page.goForward()
              await answerUnderwriting(page, async () => {}, "95000")
              await heading(page, "How do you want to protect your deposit?")
              await page.getByRole("radio", { name: "Deposit insurance, paid once" }).check()
              await page.getByRole("button", { name: "Continue" }).click()

              // 5 and 7: the check counts its step, and shows the phone formatted.
              await heading(page, "Check your answers before paying")
              await page.getByText("Step 4 of 5").waitFor()
              assert.include(await page.locator("#answers-details").innerText(), "(555) 201-3344")
              await seen("check")
              await page.getByRole("link", { name: "Continue to payment" }).click()
              await heading(page, "Pay for your deposit insurance")
              await page.getByText("Step 5 of 5").waitFor()
              assert.strictEqual(await page.getByText("Your quote").count(), 0)
              await page.getByLabel("Billing ZIP code (optional)").waitFor()
              await seen("pay")
              await page.getByLabel("Card number").fill("4242 4242 4242 4241")
              await page.getByLabel("Expiry date").fill("12/30")
              await page.getByLabel("Security code").fill("123")
              await page.getByRole("button", { name: /^Pay / }).click()
              await page.getByRole("alert").getByText("This card number is not valid").waitFor()
              assert.notInclude(page.url(), "4242")
              assert.strictEqual(await page.getByLabel("Card number").inputValue(), "")
              await seen("pay-card-not-valid")
              const errorPage = page.url()
              await page.getByRole("link", { name: "Choose a different option" }).click()
              await heading(page, "How do you want to protect your deposit?")
              const backToErrors = (await page.goBack())!
              assert.strictEqual(backToErrors.request().method(), "GET")
              assert.strictEqual(page.url(), errorPage)
              await page.getByRole("alert").getByText("This card number is not valid").waitFor()
              await seen("pay-errors-after-back")
              await page.close()
            })
          }),
      )

      it.effect(
        `at ${width} px, the receipt says what was bought and when it was paid, and its tagged documents appear by themselves`,
        () =>
          Effect.gen(function* () {
            const { browser } = yield* E2e
            const gateway = yield* gatewayPort("enrollment")
            const page = yield* promise(() => browser.newPage())
            const shot = screenshots(page, `face-receipt-${width}`)
            const pdfs: Array<string> = []
            for (const [name, option, heading_, bought, documents] of [
              [
                "insurance",
                "Deposit insurance, paid once",
                "Your deposit is protected",
                /Deposit insurance: insurance issued by Example Insurance Company/,
                ["Policy declaration (PDF)", "Certificate of coverage (PDF)"],
              ],
              [
                "cash-deposit",
                "Pay a refundable cash deposit",
                "Your cash deposit is paid",
                /A refundable cash deposit of \$2,500, held by Example Deposit Services, LLC until your lease ends/,
                ["Cash deposit receipt (PDF)", "Certificate of deposit held (PDF)"],
              ],
            ] as const) {
              const { enrollmentUrl } = yield* renter(`p-face-receipt-${name}-${width}`)
              yield* promise(async () => {
                await page.setViewportSize({ width, height: 800 })
                await page.goto(enrollmentUrl)
                await heading(page, "Check your details")
                await page.getByRole("button", { name: "Confirm and continue" }).click()
                await answerUnderwriting(page, async () => {}, "95000")
                await heading(page, "How do you want to protect your deposit?")
                await page.getByRole("radio", { name: option }).check()
                await page.getByRole("button", { name: "Continue" }).click()
                await heading(page, "Check your answers before paying")
                await page.getByRole("link", { name: "Continue to payment" }).click()
                await heading(page, PAY_HEADING)
                const quote = await page.locator("main").innerText()
                assert.notInclude(quote, "Deposit protection,", `${name}: no placeholder holder`)
                await page.getByLabel("Card number").fill(TEST_CARDS.ok)
                await page.getByLabel("Expiry date").fill("12/30")
                await page.getByLabel("Security code").fill("123")
                await page.getByRole("button", { name: /^Pay / }).click()
                await heading(page, COMPLETED_HEADING)
                await heading(page, heading_)
                // The receipt loaded again while its documents are still being made, whether or not the document
                // actor has been quicker this time (the pay's redirect to the receipt is not routed, so the load
                // is a plain one): the page's own requests after it are left alone.
                let receiptLoads = 0
                // The page's own requests wait until the pending state has been looked at, however slow the look.
                let releasePolls = () => {}
                const pollsHeld = new Promise<void>((resolve) => (releasePolls = resolve))
                await page.route(/\/completed\?/, async (route) => {
                  receiptLoads += 1
                  if (receiptLoads > 1) return pollsHeld.then(() => route.continue())
                  // Asked of the enrollment gateway itself: the test's process does not resolve the sites' names.
                  const url = new URL(route.request().url())
                  const response = await fetch(`http://127.0.0.1:${gateway}${url.pathname}${url.search}`)
                  const body = (await response.text()).replace(
                    /<div id="documents" aria-live="polite">[^]*?<\/ul>\s*<\/div>/,
                    PENDING_DOCUMENTS,
                  )
                  return route.fulfill({
                    status: response.status,
                    // The body changed: its length and encoding are the new body's, not the fetched one's.
                    headers: Object.fromEntries(
                      [...response.headers].filter(
                        ([name]) => name !== "content-length" && name !== "content-encoding",
                      ),
                    ),
                    body,
                  })
                })
                await page.reload()
                await heading(page, heading_)
                const receipt = (await page.locator("main").innerText()).replace(/\s+/g, " ")
                assert.match(receipt, bought, name)
                assert.match(
                  receipt,
                  /Paid \$[\d,]+ on [A-Z][a-z]+ \d{1,2}, \d{4} with the card ending 4242/,
                  name,
                )
                if (name === "cash-deposit") {
                  assert.include(receipt, "Your deposit reference DEP-")
                  assert.notInclude(receipt, "policy number")
                  assert.notInclude(receipt, "Price")
                } else assert.include(receipt, "Your policy number SDI-")
                // The documents appear without a reload: the first load is the only navigation.
                let navigations = 0
                page.on("framenavigated", (frame) => {
                  if (frame === page.mainFrame()) navigations += 1
                })
                if (width === 360 || name === "insurance") {
                  await page.getByText("Your documents are being prepared").waitFor()
                  await shot(`${name}-documents-pending`)
                  await assertAccessible(page, `${width} px: receipt (${name}), documents being made`)
                }
                releasePolls()
                for (const document of documents) {
                  await page.getByRole("link", { name: document }).waitFor({ timeout: 60_000 })
                  pdfs.push((await page.getByRole("link", { name: document }).getAttribute("href"))!)
                }
                assert.strictEqual(navigations, 0, `${name}: the page was not reloaded`)
                assert.isAbove(receiptLoads, 1, `${name}: the page asked for itself again`)
                await page.unroute(/\/completed\?/)
                await shot(name)
                await assertAccessible(page, `${width} px: receipt (${name})`)
              })
            }
            for (const pdf of pdfs) {
              const answer = yield* getPage(pathOf(new URL(pdf, ENROLLMENT_ORIGIN).href))
              assert.strictEqual(answer.status, 200, pdf)
              assert.match(answer.text, /\/StructTreeRoot \d+ 0 R/, `${pdf}: tagged`)
              assert.match(answer.text, /\/MarkInfo <<\s*\/Marked true\s*>>/, pdf)
              assert.match(answer.text, /\/Lang \(en-US\)/, pdf)
            }
            // The terms say how to cancel and what is refunded.
            for (const terms of ["security_deposit_insurance", "cash_deposit"]) {
              yield* promise(async () => {
                await page.goto(`${ENROLLMENT_ORIGIN}/enrollment/terms/${terms}`)
                await page.getByRole("heading", { level: 2, name: "Cancelling" }).waitFor()
                assert.match(await page.locator("main").innerText(), /To cancel, email[^]*What is refunded/)
                await shot(`terms-${terms}`)
                await assertAccessible(page, `${width} px: terms of ${terms}`)
              })
            }
            yield* promise(() => page.close())
          }),
      )

      it.effect(`at ${width} px, the choice says why each product is not offered, in plain words`, () =>
        Effect.gen(function* () {
          const { browser } = yield* E2e
          const low = yield* renter(`p-face-why-low-${width}`)
          const denied = yield* renter(`p-face-why-denied-${width}`, { screening_result: "denied" })
          const page = yield* promise(() => browser.newPage())
          const shot = screenshots(page, `face-why-${width}`)
          for (const [name, link, income, reason] of [
            ["low-income", low.enrollmentUrl, "10000", /Deposit insurance: Your yearly income is below/],
            [
              "screening",
              denied.enrollmentUrl,
              "95000",
              /Deposit insurance: The result of your rental screening/,
            ],
          ] as const) {
            yield* promise(async () => {
              await page.setViewportSize({ width, height: 800 })
              await page.goto(link)
              await heading(page, "Check your details")
              await page.getByRole("button", { name: "Confirm and continue" }).click()
              await answerUnderwriting(page, async () => {}, income)
              await heading(page, "How do you want to protect your deposit?")
              const notice = page.locator("#not-offered")
              await notice.getByRole("heading", { name: "Not offered to you" }).waitFor()
              const text = (await notice.innerText()).replace(/\s+/g, " ")
              assert.match(text, reason, name)
              assert.notMatch(text, /\d|times|rule|_/, `${name}: no formula, number or rule name`)
              assert.strictEqual(await page.getByRole("radio", { name: /Deposit insurance/ }).count(), 0)
              await shot(name)
              await assertAccessible(page, `${width} px: not offered (${name})`)
            })
          }
          // The owner's brand name, when it has one, is the name the header shows.
          const branded = yield* enrollableRenter(`face-brand-${width}`, {
            owner: { brand_name: "Maple Street Homes" },
          })
          yield* promise(async () => {
            await page.goto(branded.enrollmentUrl)
            await heading(page, "Check your details")
            assert.strictEqual(
              (await page.locator("header").innerText()).replace(/\s+/g, " ").trim(),
              "Deposit protection Offered by Maple Street Homes",
            )
            await shot("brand-name")
            await assertAccessible(page, `${width} px: the owner's brand name in the header`)
          })
          yield* promise(() => page.close())
        }),
      )
    }
  })
})

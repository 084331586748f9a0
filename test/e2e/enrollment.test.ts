import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { accessibilityReport, assertAccessible } from "../support/Accessibility.ts"
import {
  answerUnderwriting,
  checkAnswers,
  choose,
  confirmDetails,
  E2e,
  enrollmentE2e,
  focused,
  framed,
  heading,
  messagesOf,
  OPTION,
  outcomes,
  PARTNER,
  pay,
  promise,
  renter,
  resizes,
  returningTo,
  screenshots,
  STRANGER,
} from "../support/EnrollmentBrowser.ts"

const { origin: ENROLLMENT_ORIGIN, layer: e2e } = await enrollmentE2e()

describe("the renter's enrollment in headless Chromium", () => {
  layer(e2e, { excludeTestServices: true, timeout: 300_000 })((it) => {
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
        assert.strictEqual(yield* promise(() => page.getByRole("link", { name: /^Continue to/ }).count()), 0)
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
  })
})

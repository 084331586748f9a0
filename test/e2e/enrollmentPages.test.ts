import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { assertAccessible } from "../support/Accessibility.ts"
import { enrollableRenter, getPage, pathOf } from "../support/Enrollment.ts"
import {
  answerUnderwriting,
  checkAnswers,
  choose,
  COMPLETED_HEADING,
  confirmDetails,
  E2e,
  enrollmentE2e,
  heading,
  OPTION,
  PAY_HEADING,
  pay,
  promise,
  renter,
  screenshots,
  WIDTHS,
} from "../support/EnrollmentBrowser.ts"
import { PROPERTY } from "../support/Prospects.ts"
import { postBatch } from "../support/Roster.ts"
import { awaitProspect, completeProspect, postProspect } from "../support/Prospects.ts"

const { origin: ENROLLMENT_ORIGIN, layer: e2e } = await enrollmentE2e()

describe("the renter's enrollment in headless Chromium", () => {
  layer(e2e, { excludeTestServices: true, timeout: 300_000 })((it) => {
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
            const option = width === 360 ? "Deposit insurance, paid monthly" : "Deposit insurance, paid once"
            yield* promise(async () => {
              await page.setViewportSize({ width, height: width === 360 ? 740 : 900 })
              await page.goto(hostedEnrollmentUrl)
              await heading(page, "Check your details")
              await page.getByText("Step 1 of 5").waitFor()
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

              await heading(page, PAY_HEADING)
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
              // The documents follow the payment: the page shows each PDF once they are stored, by itself.
              await page.getByRole("link", { name: "Policy declaration (PDF)" }).waitFor({ timeout: 60_000 })
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
              await heading(page, COMPLETED_HEADING)
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
              await heading(page, COMPLETED_HEADING)
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
            assert.strictEqual(await page.getByLabel("Phone number").inputValue(), "(555) 111-2222")
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
            assert.include(answers, "(555) 111-2222")
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
            await heading(page, COMPLETED_HEADING)
            await page.close()
          })
        }),
      )
    }
  })
})

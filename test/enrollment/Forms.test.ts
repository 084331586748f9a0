import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { gatewayPort, httpRequest } from "../support/Auth.ts"
import { PROPERTY } from "../support/Prospects.ts"
import { postBatch } from "../support/Roster.ts"
import {
  anotherRenter,
  enrollableRenter,
  enrollmentService,
  formTokenOf,
  getPage,
  headingOf,
  pathOf,
  postForm,
} from "../support/Enrollment.ts"

const service = enrollmentService()

/** The answers that take a renter from their details to the quote. */
const UP_TO_QUOTE: ReadonlyArray<Record<string, string>> = [
  { step: "details", phone: "5559876543" },
  {
    step: "underwriting",
    yearly_income: "95000",
    employment_status: "employed",
    has_ssn: "yes",
    terms_accepted: "yes",
  },
  { step: "choose", choice: "security_deposit_insurance:upfront" },
]

/** The address of one of the link's pages (`/details`, `/income`, `/choose`, `/check`, `/pay`, ...). */
const pageOf = (link: string, page: string, extra = "") => {
  const [path, query] = link.split("?", 2)
  return `${path}/${page}?${query}${extra}`
}

/** Every step answered by posting the page's own forms, up to and including the payment; its answer. */
const enrollByForms = (link: string) =>
  Effect.gen(function* () {
    for (const fields of UP_TO_QUOTE) {
      const answer = yield* postForm(link, fields)
      assert.strictEqual(answer.status, 303, `${fields.step}: ${answer.text}`)
    }
    assert.strictEqual(headingOf(yield* getPage(link)), "Check your answers before paying")
    assert.strictEqual(headingOf(yield* getPage(pageOf(link, "pay"))), "Pay for your deposit insurance")
    return yield* postForm(pageOf(link, "pay"), {
      step: "quote",
      card_number: TEST_CARDS.ok,
      expiry: "12/30",
      cvc: "123",
      name_on_card: "John Doe",
      postal_code: "62701",
    })
  })

describe("the renter's forms", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("move the renter on when the page's own form is sent, once however often it is sent", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("forms-advance")
        const link = pathOf(renter.enrollmentUrl)
        const details = yield* getPage(link)
        const token = formTokenOf(details)
        const sent = yield* postForm(link, { step: "details", phone: "5559876543" }, { token })
        assert.strictEqual(sent.status, 303)
        assert.strictEqual(sent.headers.get("location"), pageOf(link, "income"))
        assert.strictEqual(headingOf(yield* getPage(link)), "Your income and employment")

        // The same form again (a double click, a back button): the renter is on the next page, once.
        const again = yield* postForm(link, { step: "details", phone: "5550000000" }, { token })
        assert.strictEqual(again.status, 303)
        assert.strictEqual(again.headers.get("location"), pageOf(link, "income"))
        const now = yield* getPage(link)
        assert.strictEqual(headingOf(now), "Your income and employment")
        // A page the renter has not reached yet leads to the one they are on.
        const ahead = yield* getPage(pageOf(link, "pay"))
        assert.strictEqual(headingOf(ahead), "Your income and employment")
      }),
    )

    it.effect("show what needs fixing on the same step, each error tied to its field", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("forms-errors")
        const link = pathOf(renter.enrollmentUrl)
        const sent = yield* postForm(link, { step: "details", phone: "12345" })
        // Redirect-after-POST: the page's GET shows the errors, so Back and reload never send the form again.
        assert.strictEqual(sent.status, 303)
        const location = sent.headers.get("location") ?? ""
        assert.isTrue(location.startsWith(pageOf(link, "details", "&state=")), location)
        assert.notInclude(location, "12345", "what the renter typed is sealed, not in the address")
        const answer = yield* getPage(location)
        assert.strictEqual(answer.status, 200)
        assert.strictEqual(headingOf(answer), "Check your details")
        assert.match(answer.text, /<title>Error: /)
        assert.match(answer.text, /class="error-summary"[^>]*role="alert"/)
        assert.match(answer.text, /<a href="#phone">[^<]+<\/a>/, "the summary links to the field")
        assert.match(answer.text, /<p class="error-message" id="phone-error">/)
        assert.match(
          answer.text,
          /id="phone"[^>]*value="12345"[^>]*aria-describedby="phone-hint phone-error"/,
        )
        assert.strictEqual(headingOf(yield* getPage(link)), "Check your details", "nothing moved on")
      }),
    )

    it.effect("refuse a post that did not come from the page, and change nothing", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("forms-csrf")
        const other = yield* enrollableRenter("forms-csrf-other")
        const link = pathOf(renter.enrollmentUrl)
        const token = formTokenOf(yield* getPage(link))
        const otherToken = formTokenOf(yield* getPage(pathOf(other.enrollmentUrl)))
        const forged = [
          { name: "no token", token: "" },
          { name: "a made-up token", token: `${Date.now() + 60_000}.${"A".repeat(43)}` },
          { name: "another link's token", token: otherToken },
          { name: "another site's page", token, origin: "https://attacker.example" },
          { name: "no origin at all", token, origin: null },
        ] as const
        for (const attempt of forged) {
          const answer = yield* postForm(
            link,
            { step: "details", phone: "5559876543" },
            { token: attempt.token, ...("origin" in attempt ? { origin: attempt.origin } : {}) },
          )
          assert.strictEqual(answer.status, 403, attempt.name)
          assert.strictEqual(headingOf(answer), "Your answers were not sent", attempt.name)
        }
        const crossSite = yield* httpRequest(yield* gatewayPort("enrollment"), link, {
          method: "POST",
          redirect: "manual",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            origin: "https://enroll.test",
            "sec-fetch-site": "cross-site",
          },
          body: new URLSearchParams({ csrf_token: token, step: "details", phone: "5559876543" }).toString(),
        })
        assert.strictEqual(crossSite.status, 403, "the browser's fetch metadata says another site sent it")
        assert.strictEqual(headingOf(yield* getPage(link)), "Check your details", "nothing moved on")
      }),
    )

    it.effect(
      "return the renter to an allowlisted redirect_url when the expedited payment completes, and only then",
      () =>
        Effect.gen(function* () {
          const renter = yield* enrollableRenter("forms-redirect", { redirectDomains: ["partner.example"] })
          const back = "https://shop.partner.example/enrolled?ref=42"
          const returning = new URL(renter.hostedEnrollmentUrl)
          returning.searchParams.set("redirect_url", back)
          const returningLink = pathOf(returning.href)
          const paid = yield* enrollByForms(returningLink)
          // Our confirmation first, with the policy number, then a button to the partner's page.
          assert.strictEqual(paid.status, 303)
          assert.strictEqual(paid.headers.get("location"), pageOf(returningLink, "completed"))
          const confirmed = yield* getPage(returningLink)
          assert.strictEqual(headingOf(confirmed), "Your deposit is protected")
          assert.match(confirmed.text, /SDI-\d{4}-\d{6}/)
          assert.include(
            confirmed.text,
            `<a class="button" href="${back.replace("&", "&amp;")}">Continue to shop.partner.example</a>`,
          )

          const other = yield* anotherRenter(renter, "p-forms-redirect-2", { email: "other@example.com" })
          const elsewhere = new URL(other.hostedEnrollmentUrl)
          elsewhere.searchParams.set("redirect_url", "https://partner.example.attacker.test/enrolled")
          const link = pathOf(elsewhere.href)
          const stayed = yield* enrollByForms(link)
          assert.strictEqual(stayed.status, 303)
          assert.strictEqual(stayed.headers.get("location"), pageOf(link, "completed"))
          const completed = yield* getPage(link)
          assert.strictEqual(headingOf(completed), "Your deposit is protected")
          // Back to the payment once paid: the journey's end again, never the card form.
          const paidAgain = yield* getPage(pageOf(link, "pay"))
          assert.strictEqual(headingOf(paidAgain), "Your deposit is protected")
          assert.notInclude(paidAgain.text, 'name="card_number"')
          assert.notInclude(completed.text, "attacker.test")
        }),
    )

    it.effect(
      "carry a form's errors to its page's GET sealed, never with the card number, and only there",
      () =>
        Effect.gen(function* () {
          const renter = yield* enrollableRenter("forms-error-state")
          const other = yield* enrollableRenter("forms-error-state-other")
          const link = pathOf(renter.enrollmentUrl)
          for (const fields of UP_TO_QUOTE) assert.strictEqual((yield* postForm(link, fields)).status, 303)
          const card = "4242424242424241"
          const sent = yield* postForm(pageOf(link, "pay"), {
            step: "quote",
            card_number: card,
            expiry: "12/30",
            cvc: "987",
            name_on_card: "Jane Q Renter",
            postal_code: "62701",
          })
          assert.strictEqual(sent.status, 303)
          const location = sent.headers.get("location") ?? ""
          const state = new URL(location, "https://enroll.test").searchParams.get("state") ?? ""
          assert.isNotEmpty(state)
          for (const typed of [card, "987", "Jane", "62701"]) assert.notInclude(location, typed)
          const page = yield* getPage(location)
          assert.strictEqual(page.status, 200)
          assert.strictEqual(headingOf(page), "Pay for your deposit insurance")
          assert.include(page.text, "This card number is not valid")
          assert.match(page.text, /id="card-number"[^>]*value=""/, "the card number is never sent back")
          assert.match(page.text, /id="name-on-card"[^>]*value="Jane Q Renter"/)
          assert.match(page.text, /id="postal-code"[^>]*value="62701"/)
          // Altered, on another page, or on another renter's link: the page without the errors.
          const tampered = `${state.slice(0, -4)}${state.endsWith("AAAA") ? "BBBB" : "AAAA"}`
          for (const address of [
            pageOf(link, "pay", `&state=${tampered}`),
            pageOf(link, "check", `&state=${state}`),
            pageOf(pathOf(other.enrollmentUrl), "details", `&state=${state}`),
          ]) {
            const shown = yield* getPage(address)
            assert.strictEqual(shown.status, 200, address)
            assert.notInclude(shown.text, "There is a problem", address)
          }
        }),
    )

    it.effect("let the renter choose another option from the quote", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("forms-rechoose")
        const link = pathOf(renter.enrollmentUrl)
        for (const fields of UP_TO_QUOTE) assert.strictEqual((yield* postForm(link, fields)).status, 303)
        const quote = yield* getPage(pageOf(link, "pay"))
        assert.strictEqual(headingOf(quote), "Pay for your deposit insurance")
        assert.include(quote.text, "paid once")

        const changing = yield* getPage(pageOf(link, "choose", "&return=check"))
        assert.strictEqual(headingOf(changing), "How do you want to protect your deposit?")
        assert.match(changing.text, /value="security_deposit_insurance:upfront"\s+checked/)
        const chosen = yield* postForm(pageOf(link, "choose", "&return=check"), {
          step: "choose",
          choice: "security_deposit_insurance:monthly",
        })
        assert.strictEqual(chosen.status, 303)
        assert.strictEqual(chosen.headers.get("location"), pageOf(link, "check"))
        const requoted = yield* getPage(link)
        assert.strictEqual(headingOf(requoted), "Check your answers before paying")
        assert.include(requoted.text, "a month")
      }),
    )

    it.effect(
      "end on the blocked page, which tells an allowed parent `blocked`, when the building leaves the roster",
      () =>
        Effect.gen(function* () {
          const parent = "https://pms.partner.example"
          const renter = yield* enrollableRenter("forms-blocked", { frameAncestors: [parent] })
          const link = pathOf(renter.enrollmentUrl)
          assert.strictEqual((yield* postForm(link, { step: "details", phone: "5559876543" })).status, 303)
          yield* postBatch(renter.partner, renter.slug, "properties", [{ ...PROPERTY, active: false }])
          const page = yield* getPage(link)
          assert.strictEqual(headingOf(page), "You cannot continue online")
          assert.match(page.text, /<body data-parent-origins="https:\/\/pms\.partner\.example">/)
          assert.match(page.text, /data-outcome="blocked"/)
          assert.notInclude(page.text, "<form", "nothing more to answer")
        }),
    )

    it.effect("answer a body that is not a form, or too large, with a page the renter can read", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("forms-hostile")
        const link = pathOf(renter.enrollmentUrl)
        const port = yield* gatewayPort("enrollment")
        const post = (body: string, contentType: string) =>
          httpRequest(port, link, {
            method: "POST",
            redirect: "manual",
            headers: { "content-type": contentType, origin: "https://enroll.test" },
            body,
          })
        const json = yield* post(JSON.stringify({ step: "details" }), "application/json")
        assert.strictEqual(json.status, 400)
        assert.strictEqual(headingOf(json), "Your answers could not be read")
        const huge = yield* post(
          `step=details&phone=${"5".repeat(3 * 1024 * 1024)}`,
          "application/x-www-form-urlencoded",
        )
        assert.strictEqual(huge.status, 413)
        assert.strictEqual(headingOf(huge), "Your answers could not be read")
        assert.strictEqual(headingOf(yield* getPage(link)), "Check your details", "nothing moved on")
      }),
    )

    it.effect("answer a post to a link that is not valid with the neutral page", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("forms-neutral")
        const link = pathOf(renter.enrollmentUrl)
        const token = formTokenOf(yield* getPage(link))
        const wrong = new URL(renter.enrollmentUrl)
        wrong.searchParams.set("email", "someone.else@example.com")
        const answer = yield* postForm(
          pathOf(wrong.href),
          { step: "details", phone: "5559876543" },
          { token },
        )
        assert.strictEqual(answer.status, 404)
        assert.strictEqual(headingOf(answer), "This link is not valid")
      }),
    )

    it.effect("refuse a phone the renter cleared, and keep them on their details", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("forms-phone-cleared")
        const link = pathOf(renter.enrollmentUrl)
        const sent = yield* postForm(link, { step: "details", phone: "" })
        assert.strictEqual(sent.status, 303)
        const answer = yield* getPage(sent.headers.get("location") ?? "")
        assert.include(answer.text, "Enter your phone number")
        assert.strictEqual(headingOf(yield* getPage(link)), "Check your details")
      }),
    )

    it.effect("answer the host's root and an unknown document with an HTML page, not JSON", () =>
      Effect.gen(function* () {
        for (const path of [
          "/",
          `/documents/${"A".repeat(43)}.zip`,
          `/documents/${"A".repeat(43)}/x.pdf`,
          "/nope",
        ]) {
          const answer = yield* getPage(path)
          assert.strictEqual(answer.status, 404, path)
          assert.strictEqual(answer.headers.get("content-type"), "text/html; charset=utf-8", path)
          assert.strictEqual(headingOf(answer), "Page not found", path)
          assert.match(answer.text, /<html lang="en">/)
          assert.match(answer.text, /<title>Page not found - /)
          assert.match(answer.text, /<main class="main" id="main">/)
        }
        assert.strictEqual((yield* getPage("/healthz")).status, 200, "the catch-all leaves health alone")
      }),
    )

    it.effect("serve the terms of each product at its version, and the privacy notice", () =>
      Effect.gen(function* () {
        const pages = {
          "/enrollment/terms": "Terms",
          "/enrollment/terms/security_deposit_insurance": "Deposit insurance: terms",
          "/enrollment/terms/renter_guarantee_insurance/2025.12.01":
            "Renter guarantee: terms (version 2025.12.01)",
          "/enrollment/terms/cash_deposit": "Refundable cash deposit: terms",
          "/enrollment/privacy": "Privacy notice",
        }
        for (const [path, heading] of Object.entries(pages)) {
          const answer = yield* getPage(path)
          assert.strictEqual(answer.status, 200, path)
          assert.strictEqual(headingOf(answer), heading, path)
        }
        for (const path of [
          "/enrollment/terms/renter_guarantee_insurance",
          "/enrollment/terms/renter_guarantee_insurance/1999.01.01",
          "/enrollment/terms/nothing",
        ]) {
          const answer = yield* getPage(path)
          assert.strictEqual(answer.status, 404, path)
          assert.strictEqual(headingOf(answer), "Page not found", path)
        }
      }),
    )
  })
})

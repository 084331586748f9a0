import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  anotherRenter,
  enrollableRenter,
  enrollmentService,
  getPage,
  headingOf,
  pathOf,
  postForm,
} from "../support/Enrollment.ts"
import { ENROLLMENT_HOST, LEASE, postProspect } from "../support/Prospects.ts"

const service = enrollmentService()

const PARENT = "https://pms.partner.example"
const OTHER_PARENT = "https://portal.partner.example:8443"

/** The link with its `email` replaced. */
const withEmail = (url: string, email: string) => {
  const parsed = new URL(url)
  parsed.searchParams.set("email", email)
  return pathOf(parsed.href)
}

/** The link with a `redirect_url` added. */
const withRedirect = (url: string, redirectUrl: string) => {
  const parsed = new URL(url)
  parsed.searchParams.set("redirect_url", redirectUrl)
  return pathOf(parsed.href)
}

const frameAncestorsOf = (headers: Headers) =>
  /(?:^|;\s*)frame-ancestors ([^;]*)/.exec(headers.get("content-security-policy") ?? "")?.[1]

describe("enrollment links", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("opens on the renter's details when the email matches in any case", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("links-case", { frameAncestors: [PARENT] })
        assert.isTrue(renter.enrollmentUrl.startsWith(`${ENROLLMENT_HOST}/enrollment/embedded/`))
        const page = yield* getPage(withEmail(renter.enrollmentUrl, renter.email.toUpperCase()))
        assert.strictEqual(page.status, 200)
        assert.strictEqual(headingOf(page), "Check your details")
        assert.include(page.text, "John Doe")
      }),
    )

    it.effect("answers every link that is not valid with the same neutral page", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("links-neutral", { frameAncestors: [PARENT] })
        const at = { partner: renter.partner, slug: renter.slug, source: renter.source }
        // A prospect of the same owner that is ready but eligible for nothing: its unit is unknown.
        const posted = yield* postProspect(renter.partner, renter.slug, {
          source: renter.source,
          source_prospect_id: "p-ineligible",
          email: "ineligible@example.com",
          phone: "5559876543",
          first_name: "Ina",
          last_name: "Eligible",
          birthdate: "1990-05-15",
          lease_start_date: LEASE.start,
          lease_end_date: LEASE.end,
          monthly_rent_cents: 200000,
          deposit_amount_cents: 250000,
          screening_result: "approved",
          employment_status: "employed",
          yearly_income: 95000,
          has_ssn: true,
          terms_accepted_at: "2025-01-15T10:30:00Z",
          authorized_members: [],
          pms_type: "yardi",
          pms_property_id: "no-such-property",
          pms_unit_id: "no-such-unit",
        })
        assert.strictEqual(posted.status, 200)
        const valid = new URL(renter.enrollmentUrl)
        const sibling = yield* anotherRenter(at, "p-sibling", { email: "sibling@example.com" })
        const links = {
          "wrong email": withEmail(renter.enrollmentUrl, "someone.else@example.com"),
          "another prospect's email": withEmail(renter.enrollmentUrl, sibling.email),
          "no email": valid.pathname,
          "empty email": `${valid.pathname}?email=`,
          "unknown prospect": valid.pathname.replace(/\/p-links-neutral$/, "/p-nobody") + valid.search,
          "unknown source": valid.pathname.replace(`/${renter.source}/`, "/src-nobody/") + valid.search,
          "unknown owner": valid.pathname.replace(`/${renter.slug}/`, "/nobody/") + valid.search,
          "not eligible": `/enrollment/embedded/${renter.slug}/${renter.source}/p-ineligible?email=ineligible%40example.com`,
          "unknown flow": valid.pathname.replace("/embedded/", "/hosted/") + valid.search,
          "too few parts": `/enrollment/embedded/${renter.slug}/${renter.source}${valid.search}`,
          "a control character": `${valid.pathname}%0A${valid.search}`,
          "an oversized id": valid.pathname.replace(/p-links-neutral$/, "x".repeat(300)) + valid.search,
        }
        const pages = yield* Effect.forEach(Object.entries(links), ([name, path]) =>
          Effect.map(getPage(path), (page) => ({ name, page })),
        )
        const first = pages[0]!.page
        assert.strictEqual(first.status, 404)
        assert.strictEqual(headingOf(first), "This link is not valid")
        for (const { name, page } of pages) {
          assert.strictEqual(page.status, 404, name)
          assert.strictEqual(page.text, first.text, `${name}: the same body`)
          for (const secret of ["John", "Ina", "Doe", renter.email, "Main Tower"]) {
            assert.notInclude(page.text, secret, `${name} reveals nothing of the prospect`)
          }
        }
        // The valid link still works: the neutral answers were not a blanket refusal.
        assert.strictEqual((yield* getPage(pathOf(renter.enrollmentUrl))).status, 200)
      }),
    )

    it.effect(
      "lets exactly the owner's frame ancestors frame its embedded pages, and nobody its expedited ones",
      () =>
        Effect.gen(function* () {
          const renter = yield* enrollableRenter("links-frame", { frameAncestors: [PARENT, OTHER_PARENT] })
          const embedded = yield* getPage(pathOf(renter.enrollmentUrl))
          assert.strictEqual(embedded.status, 200)
          assert.strictEqual(frameAncestorsOf(embedded.headers), `${PARENT} ${OTHER_PARENT}`)
          assert.isNull(embedded.headers.get("x-frame-options"), "X-Frame-Options cannot name origins")

          const expedited = yield* getPage(pathOf(renter.hostedEnrollmentUrl))
          assert.strictEqual(expedited.status, 200)
          assert.include(renter.hostedEnrollmentUrl, "/enrollment/expedited/")
          assert.strictEqual(frameAncestorsOf(expedited.headers), "'none'")
          assert.strictEqual(expedited.headers.get("x-frame-options"), "DENY")

          // The neutral page of the owner's embedded links is framed as its pages are; it depends on the owner only.
          const wrong = yield* getPage(withEmail(renter.enrollmentUrl, "nobody@example.com"))
          assert.strictEqual(frameAncestorsOf(wrong.headers), `${PARENT} ${OTHER_PARENT}`)
          const unknownOwner = yield* getPage(
            pathOf(renter.enrollmentUrl).replace(`/${renter.slug}/`, "/nobody/"),
          )
          assert.strictEqual(frameAncestorsOf(unknownOwner.headers), "'none'")
        }),
    )

    it.effect("refuses all framing of an owner that lists no frame ancestors", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("links-noframe")
        const page = yield* getPage(pathOf(renter.enrollmentUrl))
        assert.strictEqual(page.status, 200)
        assert.strictEqual(frameAncestorsOf(page.headers), "'none'")
        assert.strictEqual(page.headers.get("x-frame-options"), "DENY")
      }),
    )

    it.effect("lets an expedited journey's end link the renter only to an allowlisted redirect_url", () =>
      Effect.gen(function* () {
        // No deposit and a low income: the journey ends (declined) after two answers, and its end page links on.
        const renter = yield* enrollableRenter("links-redirect", {
          redirectDomains: ["partner.example"],
          prospect: { deposit_amount_cents: 0 },
        })
        const hosted = pathOf(renter.hostedEnrollmentUrl)
        assert.strictEqual((yield* postForm(hosted, { step: "details", phone: "5559876543" })).status, 303)
        const answered = yield* postForm(hosted, {
          step: "underwriting",
          yearly_income: "10000",
          employment_status: "employed",
          has_ssn: "yes",
          terms_accepted: "yes",
        })
        assert.strictEqual(answered.status, 303)
        const continueFor = (url: string, redirectUrl: string) =>
          Effect.map(getPage(withRedirect(url, redirectUrl)), (page) => {
            assert.strictEqual(page.status, 200, redirectUrl)
            assert.strictEqual(headingOf(page), "We cannot offer this protection", redirectUrl)
            // Forms post and redirect to this host alone, whatever the link carries.
            assert.match(
              page.headers.get("content-security-policy") ?? "",
              /form-action 'self';/,
              redirectUrl,
            )
            const link = /<a class="button" href="([^"]*)">Continue to ([^<]*)<\/a>/.exec(page.text)
            return link === null ? undefined : { href: link[1]!.replaceAll("&amp;", "&"), host: link[2] }
          })
        const allowed = {
          "https://partner.example/return": "partner.example",
          "https://app.partner.example:8443/done?x=1&y=2": "app.partner.example:8443",
        }
        for (const [redirectUrl, host] of Object.entries(allowed)) {
          assert.deepStrictEqual(
            yield* continueFor(renter.hostedEnrollmentUrl, redirectUrl),
            { href: redirectUrl, host },
            redirectUrl,
          )
        }
        const ignored = [
          "https://evilpartner.example/return",
          "https://partner.example.attacker.test/return",
          "http://partner.example/return",
          "https://user:secret@partner.example/return",
          "https://attacker.test/?next=https://partner.example",
          "javascript:alert(1)",
          "//partner.example/return",
          "not a url",
        ]
        for (const redirectUrl of ignored) {
          assert.isUndefined(yield* continueFor(renter.hostedEnrollmentUrl, redirectUrl), redirectUrl)
        }
        // An embedded link never leads elsewhere, whatever it carries.
        assert.isUndefined(
          yield* continueFor(renter.enrollmentUrl, "https://partner.example/return"),
          "embedded",
        )
      }),
    )

    it.effect("sends the pages with a strict policy and loads nothing from elsewhere", () =>
      Effect.gen(function* () {
        const renter = yield* enrollableRenter("links-headers", { frameAncestors: [PARENT] })
        const page = yield* getPage(pathOf(renter.enrollmentUrl))
        const policy = page.headers.get("content-security-policy") ?? ""
        for (const directive of [
          "default-src 'none'",
          "script-src 'self'",
          "style-src 'self'",
          "form-action 'self'",
          "base-uri 'none'",
        ]) {
          assert.include(policy, directive)
        }
        assert.strictEqual(page.headers.get("content-type"), "text/html; charset=utf-8")
        assert.strictEqual(page.headers.get("x-content-type-options"), "nosniff")
        assert.strictEqual(page.headers.get("referrer-policy"), "same-origin")
        assert.strictEqual(page.headers.get("cache-control"), "no-store")
        assert.strictEqual(page.headers.get("strict-transport-security"), "max-age=31536000")

        // Mail and phone links load nothing; every other reference names this host.
        const references = [...page.text.matchAll(/(?:src|href)="([^"]*)"/g)]
          .map((match) => match[1]!)
          .filter((reference) => !/^(mailto|tel):/.test(reference))
        assert.isNotEmpty(references)
        for (const reference of references) {
          assert.isTrue(
            reference.startsWith("/") || reference.startsWith("#"),
            `${reference} stays on this host`,
          )
        }
        const assets = references.filter((reference) => reference.startsWith("/enrollment/assets/"))
        assert.isNotEmpty(assets, "the page loads its own assets")
        for (const asset of assets) {
          const served = yield* getPage(asset)
          assert.strictEqual(served.status, 200, asset)
          assert.strictEqual(served.headers.get("x-content-type-options"), "nosniff")
          assert.match(served.headers.get("content-type") ?? "", /^text\/(css|javascript); charset=utf-8$/)
          assert.include(served.headers.get("cache-control") ?? "", "immutable")
        }
      }),
    )
  })
})

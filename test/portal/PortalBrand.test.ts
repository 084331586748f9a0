import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import { createLink, exchange, ownerSessions, portal, portalEnv, portalOwner } from "../support/Portal.ts"
import { provisionProvider, webhookPartner } from "../support/Webhooks.ts"

const service = authService({ env: portalEnv() })

const imgSrc = (headers: Headers) =>
  headers
    .get("content-security-policy")!
    .split(";")
    .map((directive) => directive.trim())
    .find((directive) => directive.startsWith("img-src"))

describe("the portal's brand", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "shows the owner's brand in the session answer and allows its logo's origin as an image source",
      () =>
        Effect.gen(function* () {
          const partner = yield* portalOwner("brand-owner", {
            brand_name: "Acme Living",
            brand_logo_url: "https://cdn.example.com:8443/acme/logo.png",
            brand_accent_color: "#0055aa",
          })
          const { cookie } = yield* exchange((yield* createLink(partner, ownerSessions("brand-owner"))).start)
          const session = yield* portal("/portal/api/session", cookie)
          assert.strictEqual(session.status, 200, session.text)
          assert.deepStrictEqual((JSON.parse(session.text) as { brand: unknown }).brand, {
            name: "Acme Living",
            logo_url: "https://cdn.example.com:8443/acme/logo.png",
            accent_color: "#0055aa",
          })
          const home = yield* portal("/portal/", cookie)
          assert.strictEqual(home.status, 200)
          assert.strictEqual(imgSrc(home.headers), "img-src 'self' https://cdn.example.com:8443")
          assert.strictEqual(imgSrc(session.headers), "img-src 'self' https://cdn.example.com:8443")
        }),
    )

    it.effect(
      "names the owner when it set no brand name, and allows no other image source without a logo",
      () =>
        Effect.gen(function* () {
          const branded = yield* portalOwner("brand-logo", {
            brand_logo_url: "https://img.example.org/l.svg",
          })
          const plain = yield* portalOwner("brand-plain")
          const logo = yield* exchange((yield* createLink(branded, ownerSessions("brand-logo"))).start)
          const none = yield* exchange((yield* createLink(plain, ownerSessions("brand-plain"))).start)
          const session = yield* portal("/portal/api/session", none.cookie)
          assert.deepStrictEqual((JSON.parse(session.text) as { brand: unknown }).brand, {
            name: "Owner brand-plain",
            logo_url: null,
            accent_color: null,
          })
          assert.strictEqual(imgSrc((yield* portal("/portal/", none.cookie)).headers), "img-src 'self'")
          assert.strictEqual(
            imgSrc((yield* portal("/portal/", logo.cookie)).headers),
            "img-src 'self' https://img.example.org",
            "one owner's logo origin is allowed on its own session only",
          )
          assert.strictEqual(imgSrc((yield* portal("/portal/")).headers), "img-src 'self'")
        }),
    )

    it.effect("writes only the logo's origin into the policy, whatever its path holds", () =>
      Effect.gen(function* () {
        const partner = yield* portalOwner("brand-odd", {
          brand_logo_url: "https://cdn.example.com/x.png'; script-src *",
        })
        const { cookie } = yield* exchange((yield* createLink(partner, ownerSessions("brand-odd"))).start)
        const home = yield* portal("/portal/", cookie)
        assert.strictEqual(imgSrc(home.headers), "img-src 'self' https://cdn.example.com")
        assert.include(home.headers.get("content-security-policy")!, "script-src 'self';")
      }),
    )

    it.effect("has no brand on a provider's session", () =>
      Effect.gen(function* () {
        yield* portalOwner("brand-covered")
        yield* provisionProvider("brandless", { owners: ["brand-covered"] })
        const partner = yield* webhookPartner({ provider: "brandless" })
        const link = yield* createLink(partner, "/partners/providers/brandless/webhooks/portal_sessions")
        const { cookie } = yield* exchange(link.start)
        const session = yield* portal("/portal/api/session", cookie)
        assert.strictEqual(session.status, 200, session.text)
        assert.isNull((JSON.parse(session.text) as { brand: unknown }).brand)
        assert.strictEqual(imgSrc(session.headers), "img-src 'self'")
      }),
    )
  })
})

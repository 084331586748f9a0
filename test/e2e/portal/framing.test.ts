import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PORTAL_HOST_NAME } from "../../support/ParentSites.ts"
import {
  FRAME,
  framingUrl,
  newPage,
  PARTNER_SITE,
  PortalE2e,
  portalE2e,
  portalFrame,
  portalLink,
  STRANGER_SITE,
} from "../../support/PortalBrowser.ts"
import { promise } from "../../support/Console.ts"

const e2e = await portalE2e()
const TIMEOUT = 180_000

describe("the portal in a partner's frame", () => {
  layer(e2e.layer, { excludeTestServices: true, timeout: TIMEOUT })((it) => {
    it.effect(
      "opens inside the parent_origin's 600 px frame, tells it its height, and no other site may frame it",
      () =>
        Effect.gen(function* () {
          const { sites } = yield* PortalE2e
          const partnerOrigin = sites.origin(PARTNER_SITE)
          const { page, problems } = yield* newPage(1280)

          const link = yield* portalLink({ parent_origin: partnerOrigin })
          yield* promise(() => page.goto(framingUrl(sites, PARTNER_SITE, link, FRAME)))
          const frame = yield* portalFrame(page)
          yield* promise(() => frame.getByRole("heading", { level: 1 }).first().waitFor())
          assert.strictEqual(new URL(frame.url()).pathname.startsWith("/portal/"), true, frame.url())
          assert.notInclude(frame.url(), "code=", "the code leaves the address bar")
          const resized = yield* promise(() =>
            page.waitForFunction(
              (origin) =>
                (
                  (globalThis as unknown as { received: Array<{ origin: string; data: { type?: string } }> })
                    .received ?? []
                ).some((message) => message.origin === origin && message.data?.type === "portal.resize"),
              `https://${PORTAL_HOST_NAME}:${new URL(partnerOrigin).port}`,
            ),
          )
          assert.isTrue(Boolean(resized))
          assert.deepStrictEqual(problems(), [])

          // The same kind of link framed by a site the owner never listed: the browser refuses to show it.
          const stranger = yield* newPage(1280)
          const other = yield* portalLink({ parent_origin: partnerOrigin })
          yield* promise(() => stranger.page.goto(framingUrl(sites, STRANGER_SITE, other, FRAME)))
          yield* promise(() => stranger.page.waitForTimeout(500))
          const shown = yield* promise(() =>
            Promise.all(
              stranger.page
                .frames()
                .filter((f) => f !== stranger.page.mainFrame())
                .map((f) =>
                  f
                    .evaluate(() => (globalThis as unknown as { document: { title: string } }).document.title)
                    .catch(() => ""),
                ),
            ),
          )
          assert.notInclude(shown.join(" "), "Webhooks", "the portal is not drawn in a stranger's frame")
        }),
    )
  })
})

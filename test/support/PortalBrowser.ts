import { assert } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, Frame, Page } from "playwright-core"
import { authEnv, createOwner, gatewayPort } from "./Auth.ts"
import { launchBrowser } from "./Browser.ts"
import { consoleBuilt, pageProblems, promise } from "./Console.ts"
import { freePort } from "./Net.ts"
import { PORTAL_HOST_NAME, type ParentSites, startParentSites } from "./ParentSites.ts"
import { query, api, webhookPartner, type WebhookPartner } from "./Webhooks.ts"
import { engineService } from "./WebhookEngine.ts"

/*
 * The partner portal in headless Chromium: the service (Partner API, portal, console and workers) with the portal
 * behind TLS as `portal.test`, the partner's site `partner.test` that frames it, a site the owner never allowed
 * (`stranger.test`), one browser, and the owner whose developer walks through the portal.
 */

export const PARTNER_SITE = "partner.test"
export const STRANGER_SITE = "stranger.test"
export const OWNER = "night-owner"
export const OWNER_NAME = "Night Owl Properties"

/** The widths every portal page is checked at: a phone, the partner's 600 px frame, a desktop. */
export const PHONE = 360
export const FRAME = 600
export const DESKTOP = 1280

export class PortalE2e extends Context.Service<
  PortalE2e,
  {
    readonly browser: BrowserContext
    readonly sites: ParentSites
    readonly partner: WebhookPartner
  }
>()("test/e2e/portal/PortalE2e") {
  static readonly layerAt = (port: number) =>
    Layer.effect(
      PortalE2e,
      Effect.gen(function* () {
        yield* consoleBuilt
        const sites = yield* startParentSites({
          port,
          upstreams: { [PORTAL_HOST_NAME]: yield* gatewayPort("portal") },
          hosts: [PARTNER_SITE, STRANGER_SITE],
        })
        const browser = yield* launchBrowser({
          hosts: [PORTAL_HOST_NAME, PARTNER_SITE, STRANGER_SITE],
          acceptCertificates: true,
          timezoneId: "America/Los_Angeles",
        })
        yield* createOwner(OWNER, OWNER_NAME)
        yield* query(
          (sql) => sql`
            update owners set embedded_frame_ancestors = ${[sites.origin(PARTNER_SITE)]} where slug = ${OWNER}`,
        )
        const partner = yield* webhookPartner({ owners: [OWNER] })
        return { browser, sites, partner }
      }),
    )
}

/**
 * The service for the portal's browser tests, its portal reached at `https://portal.test:<port>` (a port chosen
 * before the service starts, since the one-time links carry it). Deliveries fail for good after two attempts with
 * a tiny backoff, so a failing receiver gives `failed` deliveries quickly.
 */
export const portalE2e = async () => {
  const port = await freePort()
  const service = engineService({
    ...authEnv(),
    ROLES: "partner-api,portal,console,workers",
    PORTAL_PORT: "0",
    CONSOLE_PORT: "0",
    PORTAL_BASE_URL: `https://${PORTAL_HOST_NAME}:${port}`,
    SERVICE_ENV: "development",
    WEBHOOK_MAX_ATTEMPTS: "2",
  })
  return { env: service.env, layer: PortalE2e.layerAt(port).pipe(Layer.provideMerge(service.layer)) }
}

/** A one-time link to the owner's portal, made over the Partner API with `body`. */
export const portalLink = (body: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const { partner } = yield* PortalE2e
    const made = yield* api(partner, "POST", `/partners/${OWNER}/webhooks/portal_sessions`, body)
    assert.strictEqual(made.status, 201, made.text)
    return made.body!.url as string
  })

/** A new page of the browser at `width`, with what goes wrong inside it collected. */
export const newPage = (width: number) =>
  Effect.gen(function* () {
    const { browser } = yield* PortalE2e
    const page = yield* promise(() => browser.newPage())
    page.setDefaultTimeout(30_000)
    yield* promise(() => page.setViewportSize({ width, height: 900 }))
    return { page, problems: pageProblems(page) }
  })

/** The partner's page framing `src` at `width` px, on `host`. */
export const framingUrl = (sites: ParentSites, host: string, src: string, width = FRAME) =>
  `${sites.origin(host)}/frame?width=${width}&src=${encodeURIComponent(src)}`

/** The portal's frame inside the partner's page, once it has loaded the portal. */
export const portalFrame = (page: Page) =>
  promise(async () => {
    for (let i = 0; i < 300; i++) {
      const frame = page
        .frames()
        .find((f) => f.url().includes(`${PORTAL_HOST_NAME}:`) && f !== page.mainFrame())
      if (frame !== undefined) return frame
      await page.waitForTimeout(100)
    }
    throw new Error("the portal never loaded in the partner's frame")
  })

/** Whether the page (or frame) is wider than its viewport: nothing may spill sideways. */
export const overflowsSideways = (target: Page | Frame) =>
  promise(() =>
    target.evaluate(() => {
      const root = (
        globalThis as unknown as {
          document: { documentElement: { scrollWidth: number; clientWidth: number } }
        }
      ).document.documentElement
      return root.scrollWidth > root.clientWidth + 1
    }),
  )

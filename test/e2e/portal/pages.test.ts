import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import { promise } from "../../support/Console.ts"
import {
  DESKTOP,
  newPage,
  OWNER,
  overflowsSideways,
  PHONE,
  PortalE2e,
  portalE2e,
  portalLink,
} from "../../support/PortalBrowser.ts"
import { createEndpoint, insertDelivery, ownerEndpoints } from "../../support/Webhooks.ts"

/*
 * Every page of the portal opened on its own (not framed) at a phone's and a desktop's width: drawn without a
 * horizontal spill and with no axe-core violation. A read-only session's pages show no control that changes
 * anything, and its API refuses each change.
 */

const e2e = await portalE2e()
const TIMEOUT = 300_000

/** Every page of the portal's app, by path under /portal. */
const pages = (endpointId: number, deliveryId: number) => [
  "/endpoints",
  "/endpoints/new",
  `/endpoints/${endpointId}`,
  `/endpoints/${endpointId}/edit`,
  "/deliveries",
  `/deliveries/${deliveryId}`,
  "/events",
  "/secret",
  "/verify",
]

/** What only a session that may change things shows. */
const CHANGES = [
  "New endpoint",
  "Create endpoint",
  "Edit",
  "Pause",
  "Resume",
  "Delete",
  "Send test event",
  "Count failed deliveries",
  "Retry",
  "Rotate secret",
]

const records = Effect.gen(function* () {
  const { partner } = yield* PortalE2e
  const endpoint = yield* createEndpoint(partner, ownerEndpoints(OWNER), {
    name: "Pages hook",
    destination_url: "https://hooks.example.com/pages",
    events: ["policy.created"],
  })
  const deliveryId = yield* insertDelivery(endpoint.id, {
    status: "failed",
    last_attempt_failure_reason: "Destination answered 500",
  })
  return { endpointId: endpoint.id, deliveryId }
})

/** Each page at `width`, checked; the buttons and links each shows, by name. */
const walk = (page: Page, origin: string, paths: ReadonlyArray<string>, width: number, kind: string) =>
  Effect.gen(function* () {
    const shown = new Map<string, ReadonlyArray<string>>()
    for (const path of paths) {
      yield* promise(async () => {
        await page.goto(`${origin}/portal${path}`)
        await page.locator("main h1").first().waitFor()
        await page.locator(".state-loading").first().waitFor({ state: "detached" })
        await assertAccessible(page, `${kind} ${path} at ${width} px`)
      })
      assert.isFalse(yield* overflowsSideways(page), `${kind} ${path} spills sideways at ${width} px`)
      const controls = yield* promise(() =>
        page.locator("main").getByRole("button").or(page.locator("main").getByRole("link")).allInnerTexts(),
      )
      shown.set(
        path,
        controls.map((text) => text.trim()),
      )
    }
    return shown
  })

describe("the portal's pages", () => {
  layer(e2e.layer, { excludeTestServices: true, timeout: TIMEOUT })((it) => {
    it.effect("fit a phone and a desktop with no accessibility violation; read only shows no change", () =>
      Effect.gen(function* () {
        const { endpointId, deliveryId } = yield* records
        for (const width of [PHONE, DESKTOP]) {
          // A link opens one session, once: each width gets its own.
          const link = yield* portalLink()
          const origin = new URL(link).origin
          const { page, problems } = yield* newPage(width)
          yield* promise(() => page.goto(link))
          const shown = yield* walk(page, origin, pages(endpointId, deliveryId), width, "session")
          assert.include(shown.get("/endpoints")!, "New endpoint")
          assert.include(shown.get(`/deliveries/${deliveryId}`)!, "Retry")
          assert.deepStrictEqual(problems(), [])
          yield* promise(() => page.close())
        }

        for (const width of [PHONE, DESKTOP]) {
          const readOnly = yield* portalLink({ read_only: true })
          const origin = new URL(readOnly).origin
          const { page, problems } = yield* newPage(width)
          yield* promise(() => page.goto(readOnly))
          yield* promise(() => page.getByTestId("read-only").waitFor())
          const shown = yield* walk(page, origin, pages(endpointId, deliveryId), width, "read-only session")
          for (const [path, controls] of shown) {
            for (const change of CHANGES) {
              assert.notInclude(controls, change, `read only shows "${change}" on ${path}`)
            }
          }
          assert.deepStrictEqual(problems(), [])
          yield* promise(() => page.close())
        }
      }),
    )
  })
})

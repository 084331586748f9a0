import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import type { Page } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  apiFromPage,
  openConsole,
  operatorAccount,
  promise,
  screenshot,
  sidewaysOverflow,
  signIn,
  signOut,
  tableLayout,
} from "../../support/Console.ts"
import { enrollmentService } from "../../support/Enrollment.ts"
import { awaitDeliveries, issuePolicy, lifecycleOwner } from "../../support/Lifecycle.ts"
import { startReceiver } from "../../support/Receiver.ts"

// The partner side makes the records the pages show (a prospect, a policy, its webhooks); the console serves them.
const service = enrollmentService({
  ROLES: "partner-api,enrollment,workers,console",
  CONSOLE_PORT: "0",
  SERVICE_ENV: "development",
})
const TIMEOUT = 600_000
const WIDTHS = [
  { width: 1280, height: 800 },
  { width: 768, height: 1024 },
] as const

interface Records {
  readonly deliveryId: number
  readonly endpointId: number
  readonly policyId: string
  readonly ownerSlug: string
  readonly prospectPath: string
}

/** Every page of the console (by its route's name in `console/src/router.ts`), at a path with records to show. */
const PAGES: Record<string, (r: Records) => string> = {
  login: () => "/login",
  deliveries: () => "/deliveries",
  delivery: (r) => `/deliveries/${r.deliveryId}`,
  endpoints: () => "/endpoints",
  endpoint: (r) => `/endpoints/${r.endpointId}`,
  owners: () => "/owners",
  owner: (r) => `/owners/${r.ownerSlug}`,
  prospect: (r) => r.prospectPath,
  search: () => "/search?q=pages",
  policies: () => "/policies",
  policy: (r) => `/policies/${r.policyId}`,
  secrets: () => "/secrets",
  audit: () => "/audit",
  ingest: () => "/ingest",
  system: () => "/system",
  operators: () => "/operators",
  "not-found": () => "/no-such-page",
}

const routeNames = () =>
  [...readFileSync("console/src/router.ts", "utf8").matchAll(/^\s*name: "([^"]+)",$/gm)].map((m) => m[1]!)

/** The little of the DOM this test reads inside the page (the project's types have no DOM library). */
interface PageWindow {
  readonly innerWidth: number
  readonly document: {
    readonly documentElement: { readonly scrollWidth: number }
    readonly querySelector: (selector: string) => unknown
  }
}

/** The page once it has drawn: its heading shown and nothing loading any more; what it shows when it does not. */
const settled = (page: Page, name: string) =>
  promise(async () => {
    try {
      await page.getByRole("heading", { level: 1 }).first().waitFor()
      await page.waitForFunction(
        () =>
          (globalThis as unknown as PageWindow).document.querySelector(
            ".state-loading, [aria-busy='true']",
          ) === null,
      )
    } catch (error) {
      const shown = await page
        .locator("main")
        .innerText()
        .catch(() => "")
      throw new Error(`${name} never settled at ${page.url()}, showing: ${shown.slice(0, 300)}`, {
        cause: error,
      })
    }
  })

/**
 * The lists this test holds to "fits 1280 px, cards at 360 px": every page with a list but those another change
 * lays out (audit, ingest, system, prospect, search).
 */
const LIST_PAGES = [
  "deliveries",
  "delivery",
  "endpoints",
  "endpoint",
  "owners",
  "owner",
  "policies",
  "policy",
  "secrets",
  "operators",
]

/** How much wider than the window the page is: 0 when nothing makes it scroll sideways. */
const overflow = (page: Page) =>
  promise(() =>
    page.evaluate(() => {
      const window = globalThis as unknown as PageWindow
      return window.document.documentElement.scrollWidth - window.innerWidth
    }),
  )

describe("console: every page", () => {
  layer(service.layer, { timeout: "600 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "every page, at 1280 px and 768 px, draws without errors, fits the width and has no accessibility violation; lists fit 1280 px and read as cards at 360 px",
      () =>
        Effect.gen(function* () {
          assert.deepStrictEqual(
            routeNames().sort(),
            Object.keys(PAGES).sort(),
            "a page this test does not open",
          )

          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "console-pages-org", "console-pages", "/pages")
          const issued = yield* issuePolicy(owner, "pages-renter", {
            product: "security_deposit_insurance",
            cadence: "upfront",
          })
          yield* awaitDeliveries(receiver, "/pages", (r) => r.some((d) => d.event === "policy.created"))
          const admin = yield* operatorAccount(service.env, "admin")
          const { page, origin, problems } = yield* openConsole

          yield* signIn(page, origin, admin)
          const list = yield* apiFromPage(page, "GET", "/api/deliveries")
          assert.strictEqual(list.status, 200, list.text)
          const [delivery] = (
            JSON.parse(list.text) as { deliveries: Array<{ id: number; endpoint: { id: number } }> }
          ).deliveries
          const found = yield* apiFromPage(page, "GET", "/api/search?q=pages-renter")
          const [prospect] = (JSON.parse(found.text) as { results: Array<{ path: string }> }).results
          const records: Records = {
            deliveryId: delivery!.id,
            endpointId: delivery!.endpoint.id,
            policyId: String(issued.id),
            ownerSlug: owner.slug,
            prospectPath: prospect!.path,
          }

          const seen: Array<string> = []
          for (const [name, path] of Object.entries(PAGES)) {
            if (name === "login") continue
            for (const size of WIDTHS) {
              yield* promise(() => page.setViewportSize(size))
              yield* promise(() => page.goto(`${origin}${path(records)}`))
              yield* settled(page, name)
              assert.isAtMost(yield* overflow(page), 0, `${name} at ${size.width} px scrolls sideways`)
              yield* promise(() => assertAccessible(page, `${name} at ${size.width} px`))
              yield* screenshot(page, `page-${name}-${size.width}`)
              seen.push(`${name}@${size.width}`)
              if (size.width === 1280 && LIST_PAGES.includes(name))
                assert.deepStrictEqual(
                  (yield* tableLayout(page)).scrolling,
                  [],
                  `${name}'s lists fit 1280 px`,
                )
            }
            if (!LIST_PAGES.includes(name)) continue
            // A phone: the page fits, and its lists read as cards.
            yield* promise(() => page.setViewportSize({ width: 360, height: 800 }))
            yield* promise(() => page.reload())
            yield* settled(page, name)
            assert.deepStrictEqual(yield* sidewaysOverflow(page), [], `${name} at 360 px scrolls sideways`)
            const narrow = yield* tableLayout(page)
            assert.deepStrictEqual(narrow.scrolling, [], `${name}'s lists at 360 px`)
            assert.strictEqual(narrow.rowsNotCards, 0, `${name}'s rows read as cards at 360 px`)
            yield* promise(() => assertAccessible(page, `${name} at 360 px`))
            yield* screenshot(page, `page-${name}-360`)
          }

          yield* signOut(page)
          for (const size of WIDTHS) {
            yield* promise(() => page.setViewportSize(size))
            yield* promise(() => page.goto(`${origin}/login`))
            yield* settled(page, "login")
            assert.isAtMost(yield* overflow(page), 0, `login at ${size.width} px scrolls sideways`)
            yield* promise(() => assertAccessible(page, `login at ${size.width} px`))
            yield* screenshot(page, `page-login-${size.width}`)
            seen.push(`login@${size.width}`)
          }
          assert.strictEqual(seen.length, Object.keys(PAGES).length * WIDTHS.length)
          assert.deepStrictEqual(problems(), [])
        }),
      TIMEOUT,
    )
  })
})

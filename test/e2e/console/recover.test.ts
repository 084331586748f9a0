import { mkdir } from "node:fs/promises"
import path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  consoleService,
  openConsole,
  operatorAccount,
  promise,
  screenshot,
  sidewaysOverflow,
  signIn,
} from "../../support/Console.ts"
import {
  awaitDeliveries,
  examplePayload,
  publishEvent,
  receiverEndpoint,
} from "../../support/WebhookEngine.ts"

const service = consoleService()
const EVENT = "policy.created"
const WIDTHS = [1280, 360] as const

/** The screenshot of the endpoint's recover action that docs/operator-api.md shows. */
const DOCS_IMAGE = path.join(process.cwd(), "docs", "images", "console-endpoint-recover.png")
/** `DOCS_SCREENSHOTS=1 npm test -- test/e2e/console/recover.test.ts` renews it; a plain run leaves docs/ alone. */
const RENEW_DOCS_IMAGE = process.env.DOCS_SCREENSHOTS === "1"

/** Ten minutes ago, whole minutes, as a datetime-local field takes it in the zone its label names. */
const fillMinutesAgo = (page: Page, fieldId: string) =>
  promise(async () => {
    const label = (await page.locator(`label[for='${fieldId}']`).textContent()) ?? ""
    const value = await page.evaluate((utc) => {
      const at = new Date(Date.now() - 600_000)
      const pad = (n: number) => String(n).padStart(2, "0")
      return utc
        ? at.toISOString().slice(0, 16)
        : `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`
    }, label.includes("UTC"))
    await page.locator(`#${fieldId}`).fill(value)
  })

interface Rect {
  readonly left: number
  readonly right: number
  readonly top: number
  readonly bottom: number
}
interface LayoutPage {
  readonly document: {
    readonly querySelector: (selector: string) => { readonly getBoundingClientRect: () => Rect } | null
  }
}

/** The boxes the replay form's layout is checked by, and whether the page scrolls sideways. */
const replayLayout = (page: Page) =>
  promise(() =>
    page.evaluate(() => {
      const inPage = globalThis as unknown as LayoutPage
      const box = (selector: string) => {
        const rect = inPage.document.querySelector(selector)?.getBoundingClientRect()
        return rect ? { left: rect.left, right: rect.right, top: rect.top, bottom: rect.bottom } : null
      }
      return {
        form: box("[data-testid='replays'] form"),
        since: box("#replay-since"),
        events: box("[data-testid='replays'] fieldset"),
        preview: box("[data-testid='replay-preview']"),
        actions: box("[data-testid='replays'] form .actions"),
      }
    }),
  )

describe("console: recovering an endpoint's failed deliveries", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    for (const width of WIDTHS) {
      it.effect(
        `at ${width} px, an operator counts and sends again the endpoint's failed deliveries since a time, and sees why a replay sends none`,
        () =>
          Effect.gen(function* () {
            const slug = `recover-${width}`
            const { receiver, endpointId } = yield* receiverEndpoint(slug, "/hook", [EVENT])
            receiver.respond("/hook", () => ({ status: 500, body: "down" }))
            for (let i = 0; i < 3; i++) yield* publishEvent(EVENT, slug, examplePayload(EVENT))
            yield* awaitDeliveries(
              endpointId,
              (rows) => rows.length === 3 && rows.every((row) => row.status === "failed"),
            )

            const { page, origin, problems } = yield* openConsole
            yield* promise(() => page.setViewportSize({ width, height: 900 }))
            const operator = yield* operatorAccount(service.env, "operator")
            yield* signIn(page, origin, operator)
            yield* promise(() => page.goto(`${origin}/endpoints/${endpointId}`))
            // Active, but none of its last hour's six attempts succeeded: it reads failing, in red.
            yield* promise(() =>
              page
                .getByRole("heading", { level: 1 })
                .locator(".badge-failing", { hasText: "failing · 0% · 6 failures" })
                .waitFor(),
            )
            const recover = page.getByTestId("recover")
            yield* promise(() =>
              recover.getByRole("heading", { name: "Recover failed deliveries" }).waitFor(),
            )
            const send = recover.getByRole("button", { name: /^Send again/ })
            assert.isTrue(yield* promise(() => send.isDisabled()), "nothing is sent before a count")
            yield* fillMinutesAgo(page, "recover-since")
            yield* promise(() => recover.getByRole("button", { name: "Count failed deliveries" }).click())
            yield* promise(() =>
              page
                .getByTestId("recover-preview")
                .getByText("3 failed deliveries would be sent again.")
                .waitFor(),
            )
            yield* promise(() => assertAccessible(page, `endpoint recover counted at ${width} px`))
            yield* screenshot(page, `endpoint-recover-counted-${width}`)
            if (RENEW_DOCS_IMAGE && width === 1280) {
              yield* promise(async () => {
                await mkdir(path.dirname(DOCS_IMAGE), { recursive: true })
                await recover.screenshot({ path: DOCS_IMAGE })
              })
            }

            // The replay beside it explains itself: every event has a delivery, so it has nothing to send.
            const replays = page.getByTestId("replays")
            yield* promise(() =>
              replays.getByTestId("replay-explained").getByText("no delivery of").waitFor(),
            )
            yield* fillMinutesAgo(page, "replay-since")
            yield* promise(() => replays.getByRole("button", { name: "Count the events" }).click())
            yield* promise(() =>
              page
                .getByTestId("replay-preview")
                .getByText(/^\s*0 events would be sent/)
                .waitFor(),
            )
            assert.isTrue(
              yield* promise(() => replays.getByRole("button", { name: "Replay 0 events" }).isDisabled()),
              "a replay of nothing cannot be started",
            )
            const layout = yield* replayLayout(page)
            assert.deepStrictEqual(yield* sidewaysOverflow(page), [], "the page does not scroll sideways")
            const { form, since, events, preview, actions } = layout
            assert.isNotNull(form && since && events && preview && actions)
            if (form && since && events && preview && actions) {
              assert.isAtMost(since.right, form.right, "the date field is not cut off")
              assert.isAtLeast(since.left, form.left)
              assert.isAtMost(since.bottom, events.top, "the events come below the dates")
              assert.isAtMost(events.bottom, preview.top, "the count does not cover the events")
              assert.isAtMost(preview.bottom, actions.top, "the count comes before the buttons")
            }
            yield* promise(() => assertAccessible(page, `endpoint replay of nothing at ${width} px`))
            yield* screenshot(page, `endpoint-replay-nothing-${width}`)

            // The endpoint answers again: the recovery sends the three, and its progress shows.
            receiver.respond("/hook", () => ({ status: 200, body: "ok" }))
            yield* promise(() =>
              recover.getByRole("button", { name: "Send again 3 failed deliveries" }).click(),
            )
            yield* promise(() => page.getByTestId("bulk-progress").getByText("3 of 3 retried").waitFor())
            yield* awaitDeliveries(
              endpointId,
              (rows) => rows.length === 3 && rows.every((row) => row.status === "delivered"),
            )
            yield* promise(() => assertAccessible(page, `endpoint recovered at ${width} px`))
            yield* screenshot(page, `endpoint-recovered-${width}`)
            assert.deepStrictEqual(problems(), [])
          }),
      )
    }
  })
})

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

/** The ids of the rows shown, top to bottom. */
const shownIds = (page: Page) =>
  promise(() =>
    page.locator("tr[data-delivery-id]").evaluateAll((rows) => rows.map((row) => row.dataset.deliveryId)),
  )

const scrollY = (page: Page) =>
  promise(() => page.evaluate(() => (globalThis as unknown as { scrollY: number }).scrollY))

describe("console: the live deliveries list holds still while it is read", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    for (const width of [1280, 360] as const) {
      it.effect(
        `at ${width} px, new rows wait behind an "N new — show" bar while the reader is scrolled down or focused in the list`,
        () =>
          Effect.gen(function* () {
            const slug = `hold-${width}`
            const { receiver, endpointId } = yield* receiverEndpoint(slug, "/hook", [EVENT])
            receiver.respond("/hook", () => ({ status: 200, body: "ok" }))
            const publish = (count: number) =>
              Effect.gen(function* () {
                const before = (yield* awaitDeliveries(endpointId, () => true)).length
                for (let i = 0; i < count; i++) yield* publishEvent(EVENT, slug, examplePayload(EVENT))
                return yield* awaitDeliveries(
                  endpointId,
                  (rows) => rows.length === before + count && rows.every((row) => row.status === "delivered"),
                )
              })
            const first = yield* publish(30)

            const { page, origin, problems } = yield* openConsole
            yield* promise(() => page.setViewportSize({ width, height: 800 }))
            yield* signIn(page, origin, yield* operatorAccount(service.env, "viewer", `hold-${width}`))
            yield* promise(() => page.goto(`${origin}/deliveries?endpoint=${endpointId}`))
            const newest = first.at(-1)!.id
            yield* promise(() => page.locator(`tr[data-delivery-id="${newest}"]`).waitFor())
            const before = yield* shownIds(page)
            assert.strictEqual(before[0], newest)
            const bar = page.getByTestId("new-rows").getByRole("button")

            // Scrolled down the list: twelve new deliveries wait behind the bar, the rows stay as they were.
            yield* promise(() => page.locator("tr[data-delivery-id]").nth(20).scrollIntoViewIfNeeded())
            assert.isAbove(yield* scrollY(page), 8)
            const added = (yield* publish(12)).slice(-12)
            yield* promise(() => bar.getByText("12 new — show").waitFor())
            assert.deepStrictEqual(yield* shownIds(page), before, "no row was inserted under the reader")
            assert.isAbove(yield* scrollY(page), 8, "the reader's place is kept")
            yield* promise(() => assertAccessible(page, `deliveries with new rows waiting at ${width} px`))
            yield* screenshot(page, `deliveries-new-rows-waiting-${width}`)
            yield* promise(() => bar.click())
            yield* promise(() => page.locator(`tr[data-delivery-id="${added.at(-1)!.id}"]`).waitFor())
            assert.strictEqual((yield* shownIds(page))[0], added.at(-1)!.id)
            assert.strictEqual(yield* promise(() => bar.count()), 0)

            // Scrolled down again, then back to the top: that alone shows what waited.
            yield* promise(() => page.locator("tr[data-delivery-id]").nth(20).scrollIntoViewIfNeeded())
            const later = (yield* publish(2)).slice(-2)
            yield* promise(() => bar.getByText("2 new — show").waitFor())
            yield* promise(() =>
              page.evaluate(() =>
                (globalThis as unknown as { scrollTo: (x: number, y: number) => void }).scrollTo(0, 0),
              ),
            )
            yield* promise(() => page.locator(`tr[data-delivery-id="${later.at(-1)!.id}"]`).waitFor())
            assert.strictEqual((yield* shownIds(page))[0], later.at(-1)!.id)

            // At the top, focus on a row's link holds them too; scrolling to the top with focus gone shows them.
            const shown = yield* shownIds(page)
            yield* promise(() =>
              page.evaluate(() =>
                (globalThis as unknown as { scrollTo: (x: number, y: number) => void }).scrollTo(0, 0),
              ),
            )
            yield* promise(() => page.locator("tr[data-delivery-id] a").first().focus())
            const more = (yield* publish(3)).slice(-3)
            yield* promise(() => bar.getByText("3 new — show").waitFor())
            assert.deepStrictEqual(yield* shownIds(page), shown)
            yield* promise(() => page.getByRole("heading", { level: 1, name: "Deliveries" }).click())
            yield* promise(() => page.locator(`tr[data-delivery-id="${more.at(-1)!.id}"]`).waitFor())
            assert.strictEqual((yield* shownIds(page))[0], more.at(-1)!.id)
            yield* promise(() => assertAccessible(page, `deliveries with new rows shown at ${width} px`))
            assert.deepStrictEqual(problems(), [])
          }),
      )
    }
  })
})

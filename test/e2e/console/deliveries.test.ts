import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  assertTwentyRowsFit,
  clipboardText,
  consoleService,
  openConsole,
  type OperatorAccount,
  operatorAccount,
  promise,
  screenshot,
  signIn,
} from "../../support/Console.ts"
import type { Receiver } from "../../support/Receiver.ts"
import {
  awaitDeliveries,
  type DeliveryRow,
  examplePayload,
  publishEvent,
  receiverEndpoint,
} from "../../support/WebhookEngine.ts"

const service = consoleService()
const TIMEOUT = 240_000
const OWNER = "acme"
const EVENT = "policy.created"

/** One browser for the file, an operator, and an owner's endpoint on a receiver that fails until told. */
class E2e extends Context.Service<
  E2e,
  {
    readonly browser: BrowserContext
    readonly page: Page
    readonly problems: () => ReadonlyArray<string>
    readonly origin: string
    readonly operator: OperatorAccount
    readonly receiver: Receiver
    readonly endpointId: number
  }
>()("test/e2e/console/deliveries/E2e") {
  static readonly layer = Layer.effect(
    E2e,
    Effect.gen(function* () {
      const { receiver, endpointId } = yield* receiverEndpoint(OWNER, "/hook", [EVENT])
      receiver.respond("/hook", () => ({ status: 500, body: "receiver is down for maintenance" }))
      const opened = yield* openConsole
      const operator = yield* operatorAccount(service.env, "operator")
      return { ...opened, operator, receiver, endpointId }
    }),
  )
}

/** Publishes `count` events for the endpoint and waits until each of their deliveries failed for good. */
const failedDeliveries = (endpointId: number, count: number) =>
  Effect.gen(function* () {
    const before = (yield* awaitDeliveries(endpointId, () => true)).length
    for (let i = 0; i < count; i++) yield* publishEvent(EVENT, OWNER, examplePayload(EVENT))
    const rows = yield* awaitDeliveries(
      endpointId,
      (rows) => rows.length === before + count && rows.slice(before).every((row) => row.status === "failed"),
    )
    return rows.slice(before) as ReadonlyArray<DeliveryRow>
  })

const badge = (page: Page, status: string) => page.locator("h1 .badge", { hasText: status })

describe("console: deliveries", () => {
  layer(E2e.layer.pipe(Layer.provideMerge(service.layer)), { excludeTestServices: true, timeout: 300_000 })(
    (it) => {
      it.effect(
        "an operator signs in, finds a failed delivery with its attempts, retries it and sees it delivered",
        () =>
          Effect.gen(function* () {
            const { page, origin, operator, receiver, endpointId } = yield* E2e
            const [delivery] = yield* failedDeliveries(endpointId, 1)
            const id = delivery!.id

            yield* promise(() => page.goto(`${origin}/deliveries`))
            yield* promise(() => page.getByLabel("Email").waitFor())
            assert.match(page.url(), /\/login\?next=/)
            yield* promise(() => page.getByLabel("Email").fill(operator.email))
            yield* promise(() => page.getByLabel("Password").fill("not the password"))
            yield* promise(() => page.getByRole("button", { name: "Sign in" }).click())
            yield* promise(() =>
              page.getByRole("alert").getByText("Email or password is incorrect.").waitFor(),
            )
            yield* screenshot(page, "login")
            yield* signIn(page, origin, operator)

            const row = page.locator(`tr[data-delivery-id="${id}"]`)
            yield* promise(() => row.waitFor())
            assert.include(yield* promise(() => row.innerText()), "failed")
            // A failed delivery's row says why: its last answer, the attempts made, nothing left to retry.
            assert.strictEqual(
              yield* promise(() => row.getByTestId("last-response").innerText()),
              "HTTP 500 · Destination answered 500",
            )
            assert.strictEqual(yield* promise(() => row.getByTestId("attempt-count").innerText()), "2")
            assert.strictEqual(yield* promise(() => row.getByTestId("next-retry").innerText()), "—")
            yield* screenshot(page, "deliveries")

            yield* promise(() => row.getByRole("link", { name: `#${id}` }).click())
            yield* promise(() => badge(page, "failed").waitFor())
            const attempts = page.getByTestId("attempt")
            assert.strictEqual(yield* promise(() => attempts.count()), 2)
            const first = yield* promise(() => attempts.first().innerText())
            assert.include(first, "500")
            assert.include(first, "receiver is down for maintenance")
            const raw = receiver.received("/hook")[0]!.body.toString("utf8")
            yield* promise(() => page.getByRole("button", { name: "Raw" }).click())
            assert.strictEqual(yield* promise(() => page.getByTestId("payload-raw").innerText()), raw)
            assert.include(yield* promise(() => page.locator("table").first().innerText()), "v1=")
            yield* screenshot(page, "delivery-failed")
            // Its timeline ends in its final state, failed at its last attempt, with no "delivered" step.
            const timeline = page.getByRole("list", { name: "Timeline" })
            const last = timeline.locator("li").last()
            assert.strictEqual(yield* promise(() => last.getAttribute("data-step")), "failed")
            assert.match(yield* promise(() => last.innerText()), /failed[\s\S]*\+\d/)
            assert.strictEqual(yield* promise(() => timeline.locator('[data-step="delivered"]').count()), 0)
            yield* promise(() => assertAccessible(page, "failed delivery at 1280 px"))
            yield* promise(() => page.setViewportSize({ width: 360, height: 800 }))
            yield* promise(() => assertAccessible(page, "failed delivery at 360 px"))
            yield* promise(() => page.setViewportSize({ width: 1280, height: 800 }))

            receiver.respond("/hook", () => ({ status: 200, body: "ok" }))
            yield* promise(() => page.getByRole("button", { name: "Retry" }).click())
            yield* promise(() => badge(page, "delivered").waitFor({ timeout: 90_000 }))
            assert.strictEqual(yield* promise(() => attempts.count()), 3)
            // The event's timeline. Published straight to the stream (not through the outbox), it has no
            // acceptance or commit on record; then published, routed, first attempted, delivered, each with the time
            // since the step before.
            const step = (name: string) =>
              promise(() =>
                page.getByRole("list", { name: "Timeline" }).locator(`[data-step="${name}"]`).innerText(),
              )
            assert.include(yield* step("accepted"), "not recorded")
            assert.include(yield* step("committed"), "not recorded")
            const published = yield* step("published")
            assert.notInclude(published, "not recorded")
            assert.notInclude(published, "+")
            assert.match(yield* step("routed"), /\+\d/)
            assert.match(yield* step("attempted"), /\+\d/)
            assert.match(yield* step("delivered"), /\+\d/)
            yield* screenshot(page, "delivery-delivered")
          }),
        TIMEOUT,
      )

      it.effect(
        "retries every delivery a filter selects after a preview, shows the progress and cancels",
        () =>
          Effect.gen(function* () {
            const { page, origin, receiver, endpointId } = yield* E2e
            receiver.respond("/hook", () => ({ status: 503, body: "still down" }))
            yield* failedDeliveries(endpointId, 6)

            // The filters live in the URL: this link is the view of the endpoint's failed deliveries.
            yield* promise(() => page.goto(`${origin}/deliveries?endpoint=${endpointId}&status=failed`))
            yield* promise(() => page.locator("tr[data-delivery-id]").first().waitFor())
            assert.strictEqual(yield* promise(() => page.locator("tr[data-delivery-id]").count()), 6)
            assert.strictEqual(yield* promise(() => page.getByLabel("Status").inputValue()), "failed")

            yield* promise(() => page.getByRole("button", { name: "Retry all matching" }).click())
            yield* promise(() => page.getByTestId("bulk-preview").getByText("6 deliveries match").waitFor())
            yield* promise(() => page.getByLabel("Rate").selectOption("1"))
            yield* screenshot(page, "deliveries-bulk-preview")
            yield* promise(() => page.getByRole("button", { name: "Retry 6 deliveries" }).click())

            const progress = page.getByTestId("bulk-progress")
            yield* promise(() => progress.getByText(/^[1-5] of 6 retried$/).waitFor({ timeout: 90_000 }))
            yield* screenshot(page, "deliveries-bulk-progress")
            yield* promise(() => page.getByRole("button", { name: "Cancel" }).click())
            yield* promise(() => page.locator("#bulk-heading .badge", { hasText: "canceled" }).waitFor())
            const done = Number((yield* promise(() => progress.innerText())).split(" ")[0])
            assert.isBelow(done, 6)
            assert.isAtLeast(done, 1)
          }),
        TIMEOUT,
      )

      it.effect(
        "shows twenty rows at 1280 px without wrapping, copies an id, and is accessible at 1280 and 768 px",
        () =>
          Effect.gen(function* () {
            const { browser, page, origin, receiver, endpointId } = yield* E2e
            receiver.respond("/hook", () => ({ status: 500, body: "receiver is down for maintenance" }))
            const [first] = yield* failedDeliveries(endpointId, 20)
            yield* promise(() => browser.grantPermissions(["clipboard-read", "clipboard-write"], { origin }))
            yield* promise(() => page.setViewportSize({ width: 1280, height: 800 }))
            yield* promise(() => page.goto(`${origin}/deliveries`))
            yield* assertTwentyRowsFit(page, "tr[data-delivery-id]")
            yield* screenshot(page, "deliveries-list")
            yield* promise(() => assertAccessible(page, "deliveries list at 1280 px"))

            const copy = page.getByRole("button", { name: `Copy delivery id ${first!.id}`, exact: true })
            yield* promise(() => copy.click())
            yield* promise(() => copy.getByText("Copied").waitFor())
            assert.strictEqual(yield* clipboardText(page), first!.id)

            yield* promise(() => page.setViewportSize({ width: 768, height: 1024 }))
            yield* promise(() => page.reload())
            yield* promise(() => page.locator("tr[data-delivery-id]").nth(19).waitFor())
            yield* screenshot(page, "deliveries-list-768")
            yield* promise(() => assertAccessible(page, "deliveries list at 768 px"))
            yield* promise(() => page.setViewportSize({ width: 1280, height: 900 }))
          }),
        TIMEOUT,
      )

      it.effect(
        "lists each of the operator's actions in the audit log",
        () =>
          Effect.gen(function* () {
            const { page, origin, operator } = yield* E2e
            yield* promise(() => page.goto(`${origin}/audit?actor=${encodeURIComponent(operator.email)}`))
            const entries = page.getByTestId("audit-entry")
            yield* promise(() => entries.first().waitFor())
            const text = (yield* promise(() => entries.allInnerTexts())).join("\n")
            assert.match(text, /retry/i)
            assert.match(text, /bulk/i)
            assert.match(text, /cancel/i)
            yield* screenshot(page, "audit")

            yield* promise(() => page.setViewportSize({ width: 768, height: 1024 }))
            yield* promise(() => page.goto(`${origin}/deliveries`))
            yield* promise(() => page.locator("tr[data-delivery-id]").first().waitFor())
            yield* screenshot(page, "deliveries-tablet")
            // Every page of the file ran under the strict CSP without an error.
            assert.deepStrictEqual((yield* E2e).problems(), [])
          }),
        TIMEOUT,
      )
    },
  )
})

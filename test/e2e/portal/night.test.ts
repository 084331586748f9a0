import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Frame } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import { clipboardText, consoleOrigin, operatorAccount, promise, signIn } from "../../support/Console.ts"
import { PORTAL_HOST_NAME } from "../../support/ParentSites.ts"
import {
  DESKTOP,
  FRAME,
  framingUrl,
  newPage,
  OWNER,
  overflowsSideways,
  PARTNER_SITE,
  PortalE2e,
  portalE2e,
  portalFrame,
  portalLink,
} from "../../support/PortalBrowser.ts"
import { startReceiver } from "../../support/Receiver.ts"
import {
  awaitDeliveries,
  examplePayload,
  publishEvent,
  query,
  verifySignature,
} from "../../support/WebhookEngine.ts"

/*
 * A partner's night, in the portal framed 600 px wide by the partner's page: their receiver breaks, they create
 * an endpoint to it, send a test event, read the failed attempt's status and body, fix the receiver, retry and
 * watch the delivery turn delivered without a reload, recover every failure since a time (the preview's count
 * is what is sent), and rotate the secret, copy it once and verify the next delivery with it. axe-core checks
 * every page and dialog on the way.
 */

const e2e = await portalE2e()
const TIMEOUT = 300_000
const DOWN = "receiver down: database is locked"

/** The page (inside the frame) after its heading has drawn, checked with axe-core. */
const accessible = (frame: Frame, name: string) =>
  promise(async () => {
    await frame.locator("main h1").first().waitFor()
    await assertAccessible(frame, name)
  })

describe("a partner's night in the portal", () => {
  layer(e2e.layer, { excludeTestServices: true, timeout: TIMEOUT })((it) => {
    it.effect("fixes a broken receiver, recovers the failures and rotates the secret, all in the frame", () =>
      Effect.gen(function* () {
        const { sites, browser } = yield* PortalE2e
        const receiver = yield* startReceiver
        receiver.respond("/night", () => ({ status: 500, body: DOWN }))
        const partnerOrigin = sites.origin(PARTNER_SITE)
        yield* promise(() =>
          browser.grantPermissions(["clipboard-read", "clipboard-write"], { origin: partnerOrigin }),
        )
        const { page, problems } = yield* newPage(DESKTOP)
        const link = yield* portalLink({ parent_origin: partnerOrigin })
        yield* promise(() => page.goto(framingUrl(sites, PARTNER_SITE, link, FRAME)))
        const frame = yield* portalFrame(page)
        yield* accessible(frame, "endpoints, none yet")
        assert.isFalse(yield* overflowsSideways(frame), "nothing spills sideways in the 600 px frame")

        // A new endpoint to the broken receiver.
        yield* promise(() => frame.getByRole("link", { name: "New endpoint" }).click())
        yield* accessible(frame, "new endpoint form")
        yield* promise(async () => {
          await frame.getByLabel("Name", { exact: true }).fill("Night receiver")
          await frame.getByLabel("URL", { exact: true }).fill(receiver.url("/night"))
          await frame.getByRole("checkbox", { name: /^policy\.created / }).check()
          await frame.getByRole("button", { name: "Create endpoint" }).click()
          await frame.getByRole("heading", { level: 1, name: /Night receiver/ }).waitFor()
        })
        yield* accessible(frame, "the new endpoint")
        const [endpoint] = yield* query(
          (sql) =>
            sql<Array<{ id: string }>>`select id::text from webhook_endpoints where name = 'Night receiver'`,
        )
        const endpointId = Number(endpoint!.id)

        // A test event fails with the receiver's answer.
        yield* promise(async () => {
          await frame.getByLabel("Event", { exact: true }).selectOption("policy.created")
          await frame.getByRole("button", { name: "Send test event" }).click()
          await frame.getByTestId("test-delivery").filter({ hasText: "failed" }).waitFor()
          await frame.getByTestId("test-delivery").getByRole("link").click()
          await frame.getByTestId("delivery-status").filter({ hasText: "failed" }).waitFor()
        })
        const attempts = yield* promise(() => frame.getByTestId("attempt").allInnerTexts())
        assert.isAtLeast(attempts.length, 1)
        assert.include(attempts[0]!, "500")
        assert.include(attempts[0]!, DOWN)
        yield* accessible(frame, "the failed delivery")

        // Fixed, retried, and delivered on screen without a reload.
        receiver.respond("/night", () => ({ status: 200, body: "ok" }))
        yield* promise(() =>
          frame.evaluate(() => ((globalThis as unknown as { stayed: boolean }).stayed = true)),
        )
        yield* promise(async () => {
          await frame.getByRole("button", { name: "Retry" }).click()
          await frame.getByTestId("delivery-status").filter({ hasText: "delivered" }).waitFor()
        })
        assert.isTrue(
          yield* promise(() =>
            frame.evaluate(() => (globalThis as unknown as { stayed?: boolean }).stayed === true),
          ),
          "the page was not reloaded",
        )

        // Three more fail while the receiver is down again; recover them once it is back.
        receiver.respond("/night", () => ({ status: 500, body: DOWN }))
        for (let i = 0; i < 3; i++) {
          yield* publishEvent("policy.created", OWNER, examplePayload("policy.created"))
        }
        yield* awaitDeliveries(
          endpointId,
          (rows) => rows.filter((row) => row.status === "failed").length === 3,
        )
        receiver.respond("/night", () => ({ status: 200, body: "ok" }))
        const before = receiver.received("/night").length
        yield* promise(async () => {
          await frame.getByRole("link", { name: "Night receiver" }).first().click()
          await frame.getByRole("button", { name: "Count failed deliveries" }).click()
          await frame.getByTestId("recover-preview").waitFor()
        })
        const preview = yield* promise(() => frame.getByTestId("recover-preview").innerText())
        const counted = Number(/(\d+)/.exec(preview)![1])
        assert.strictEqual(counted, 3, preview)
        yield* accessible(frame, "the recovery's preview")
        yield* promise(async () => {
          await frame.getByRole("button", { name: "Start" }).click()
          await frame
            .getByTestId("recover-progress")
            .filter({ hasText: `${counted} of ${counted}` })
            .waitFor()
        })
        yield* awaitDeliveries(endpointId, (rows) => rows.every((row) => row.status === "delivered"))
        assert.strictEqual(
          receiver.received("/night").length - before,
          counted,
          "the preview's count was sent",
        )

        // A new secret, copied once; the next delivery verifies with it.
        yield* promise(async () => {
          await frame.getByRole("link", { name: "Signing secret" }).click()
          await frame.getByRole("button", { name: "Rotate secret" }).click()
          await frame.getByLabel(/Overlap in hours/).fill("0")
          await frame.getByRole("button", { name: "Rotate", exact: true }).click()
          await frame.getByTestId("new-secret").waitFor()
        })
        yield* promise(() => assertAccessible(frame, "the new secret, shown once"))
        const shown = (yield* promise(() => frame.getByTestId("new-secret").innerText())).trim()
        yield* promise(async () => {
          await frame.getByRole("button", { name: "Copy new signing secret" }).click()
          await frame.getByText("Copied", { exact: true }).waitFor()
        })
        const copied = yield* clipboardText(page)
        assert.strictEqual(copied, shown)
        yield* promise(async () => {
          await page.keyboard.press("Escape")
          await frame.getByText("Did you save the new secret?").waitFor()
          await frame.getByRole("button", { name: "Yes, close" }).click()
        })
        assert.strictEqual(
          yield* promise(() => frame.getByTestId("new-secret").count()),
          0,
          "shown once only",
        )

        const received = receiver.received("/night").length
        yield* publishEvent("policy.created", OWNER, examplePayload("policy.created"))
        yield* awaitDeliveries(
          endpointId,
          (rows) => rows.every((row) => row.status === "delivered") && rows.length >= 5,
        )
        const next = receiver.received("/night")[received]!
        assert.deepStrictEqual(
          verifySignature(next.headers, next.body, [copied, "not the secret"]).verifiedBy,
          [copied],
        )

        for (const [link, name] of [
          ["Deliveries", "the deliveries"],
          ["Event catalog", "the event catalog"],
          ["Verify signatures", "the verification snippets"],
        ] as const) {
          yield* promise(() => frame.getByRole("link", { name: link, exact: true }).click())
          yield* accessible(frame, name)
          assert.isFalse(yield* overflowsSideways(frame), `${name} fit the 600 px frame`)
        }
        const origin = `https://${PORTAL_HOST_NAME}:${new URL(partnerOrigin).port}`
        const resizes = yield* promise(() =>
          page.evaluate(
            (from) =>
              (
                globalThis as unknown as { received: Array<{ origin: string; data: { type?: string } }> }
              ).received.filter(
                (message) => message.origin === from && message.data?.type === "portal.resize",
              ).length,
            origin,
          ),
        )
        assert.isAbove(resizes, 0, "the frame was told the portal's height")
        assert.deepStrictEqual(problems(), [])

        // The operators see every change of the night in the console's audit log, with channel `portal`.
        const account = yield* operatorAccount(e2e.env, "viewer")
        const console_ = yield* newPage(DESKTOP)
        yield* signIn(console_.page, yield* consoleOrigin, account)
        yield* promise(() => console_.page.goto(`${new URL(console_.page.url()).origin}/audit`))
        yield* promise(() => console_.page.getByTestId("audit-entry").first().waitFor())
        const entries = yield* promise(() => console_.page.getByTestId("audit-entry").allInnerTexts())
        const ofPortal = entries.filter((entry) => /\bportal:\d+\b/.test(entry) && /\bportal\b/.test(entry))
        for (const action of [
          "endpoints.create",
          "endpoints.send_test",
          "deliveries.retry",
          "webhook_secrets.rotate",
        ]) {
          assert.isTrue(
            ofPortal.some((entry) => entry.includes(action)),
            `${action} by the portal session in the audit page:\n${entries.join("\n")}`,
          )
        }
      }),
    )
  })
})

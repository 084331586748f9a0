import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  apiFromPage,
  assertTwentyRowsFit,
  clipboardText,
  consoleService,
  openConsole,
  type OperatorAccount,
  operatorAccount,
  promise,
  screenshot,
  signIn,
  signOut,
} from "../../support/Console.ts"
import type { Receiver } from "../../support/Receiver.ts"
import { eventually } from "../../support/Streams.ts"
import {
  awaitDeliveries,
  endpoint,
  examplePayload,
  publishEvent,
  receiverEndpoint,
  verifySignature,
} from "../../support/WebhookEngine.ts"

const service = consoleService()
const TIMEOUT = 240_000
const OWNER = "globex"
const EVENT = "prospect.ready"

/** One browser for the file, an operator and an admin, and an owner's endpoint on a receiver that answers 200. */
class E2e extends Context.Service<
  E2e,
  {
    readonly browser: BrowserContext
    readonly page: Page
    readonly problems: () => ReadonlyArray<string>
    readonly origin: string
    readonly operator: OperatorAccount
    readonly admin: OperatorAccount
    readonly receiver: Receiver
    readonly endpointId: number
    readonly secret: string
  }
>()("test/e2e/console/endpoints/E2e") {
  static readonly layer = Layer.effect(
    E2e,
    Effect.gen(function* () {
      const { receiver, endpointId, subscriber } = yield* receiverEndpoint(OWNER, "/hook", [EVENT])
      return {
        ...(yield* openConsole),
        operator: yield* operatorAccount(service.env, "operator"),
        admin: yield* operatorAccount(service.env, "admin"),
        receiver,
        endpointId,
        secret: subscriber.secret,
      }
    }),
  )
}

const publish = () => publishEvent(EVENT, OWNER, examplePayload(EVENT))
const heading = (page: Page, text: string | RegExp) =>
  promise(() => page.getByRole("heading", { level: 1, name: text }).waitFor())

describe("console: endpoints, secrets, operators and roles", () => {
  layer(E2e.layer.pipe(Layer.provideMerge(service.layer)), { excludeTestServices: true, timeout: 300_000 })(
    (it) => {
      it.effect(
        "an operator suspends an endpoint with a reason and sees new deliveries held, then activates it",
        () =>
          Effect.gen(function* () {
            const { page, origin, operator, receiver, endpointId } = yield* E2e
            yield* signIn(page, origin, operator)
            yield* promise(() => page.getByRole("link", { name: "Endpoints", exact: true }).click())
            yield* heading(page, "Endpoints")
            yield* screenshot(page, "endpoints")
            yield* promise(() => page.getByRole("link", { name: "test endpoint" }).click())
            yield* heading(page, /test endpoint/)
            // Suspend asks first, and for a reason.
            yield* promise(() => page.getByRole("button", { name: "Suspend" }).click())
            const dialog = page.getByRole("dialog", { name: "Suspend endpoint" })
            const confirm = dialog.getByRole("button", { name: "Suspend endpoint" })
            yield* promise(() => confirm.waitFor())
            assert.isTrue(yield* promise(() => confirm.isDisabled()), "no reason, no suspension")
            assert.strictEqual(
              yield* promise(() => page.locator("h1 .badge", { hasText: "active" }).count()),
              1,
            )
            yield* promise(() => dialog.getByLabel("Reason").fill("receiver migrating"))
            yield* screenshot(page, "endpoint-suspend")
            yield* promise(() => confirm.click())
            yield* promise(() => page.locator("h1 .badge", { hasText: "suspended" }).waitFor())
            yield* promise(() => page.getByTestId("status-reason").getByText("receiver migrating").waitFor())
            yield* promise(() =>
              page
                .getByTestId("action-done")
                .getByText(/Endpoint suspended/)
                .waitFor(),
            )

            yield* publish()
            const [held] = yield* awaitDeliveries(endpointId, (rows) => rows.length === 1)
            yield* promise(() => page.goto(`${origin}/deliveries?endpoint=${endpointId}`))
            const row = page.locator(`tr[data-delivery-id="${held!.id}"]`)
            yield* promise(() => row.locator(".badge", { hasText: "held" }).waitFor())
            assert.strictEqual(receiver.received("/hook").length, 0)
            yield* screenshot(page, "deliveries-held")

            // A test event while suspended says it is held, and the page follows it once the endpoint is active.
            yield* promise(() => page.goBack())
            yield* heading(page, /test endpoint/)
            yield* promise(() => page.getByRole("button", { name: "Send test event" }).click())
            const test = page.getByTestId("test-delivery")
            yield* promise(() => test.getByText(/held while the endpoint is suspended/).waitFor())
            assert.strictEqual(yield* promise(() => test.locator(".badge").innerText()), "held")
            yield* promise(() => page.getByRole("button", { name: "Activate" }).click())
            yield* promise(() => page.locator("h1 .badge", { hasText: "active" }).waitFor())
            assert.strictEqual(yield* promise(() => page.getByTestId("status-reason").count()), 0)
            yield* promise(() => test.locator(".badge", { hasText: "delivered" }).waitFor())
            yield* promise(() => test.getByText(/delivered\./).waitFor())
            // The health figures count the two deliveries (the event and the test) once both went out.
            yield* awaitDeliveries(
              endpointId,
              (rows) => rows.length === 2 && rows.every((row) => row.status === "delivered"),
            )
            yield* promise(() => page.reload())
            yield* promise(() => page.getByTestId("success-rate").getByText("100.0 %").waitFor())
            // p50 and p95 as the histogram slots they lie in, the estimates on hover.
            assert.match(
              yield* promise(() => page.getByTestId("latency").innerText()),
              /^(\d[\d,]*–[\d,]+ ms|≥ [\d,]+ ms) \/ (\d[\d,]*–[\d,]+ ms|≥ [\d,]+ ms)$/,
            )
            assert.match(
              (yield* promise(() => page.getByTestId("latency").getAttribute("title"))) ?? "",
              /^Estimated \d+ ms/,
            )
            yield* screenshot(page, "endpoint")
            yield* signOut(page)
          }),
        TIMEOUT,
      )

      it.effect(
        "an admin rotates the secret and the next delivery carries two v1 signatures",
        () =>
          Effect.gen(function* () {
            const { page, origin, admin, receiver, secret } = yield* E2e
            yield* signIn(page, origin, admin)
            yield* promise(() => page.getByRole("link", { name: "Secrets" }).click())
            const row = page.locator(`tr[data-subscriber="${OWNER}"]`)
            yield* promise(() => row.waitFor())
            yield* screenshot(page, "secrets")
            yield* promise(() => row.getByRole("button", { name: "Rotate secret" }).click())
            yield* promise(() => page.getByLabel("Overlap").selectOption("24"))
            yield* promise(() => page.getByRole("button", { name: "Rotate", exact: true }).click())
            const shown = page.getByTestId("new-secret")
            yield* promise(() => shown.waitFor())
            const newSecret = (yield* promise(() => shown.innerText())).trim()
            assert.notStrictEqual(newSecret, secret)
            yield* promise(() => page.getByRole("button", { name: "Copy" }).click())
            yield* screenshot(page, "secrets-rotated")
            // Shown once: Escape asks first, and the way back shows the secret again.
            const question = page.getByText("Did you save the new secret?")
            yield* promise(() => page.keyboard.press("Escape"))
            yield* promise(() => question.waitFor())
            assert.strictEqual(
              yield* promise(() => shown.count()),
              0,
              "the question stands in for the secret",
            )
            yield* promise(() => assertAccessible(page, "rotate secret: did you save it, at 1280 px"))
            yield* promise(() => page.getByRole("button", { name: "Back to the secret" }).click())
            assert.strictEqual((yield* promise(() => shown.innerText())).trim(), newSecret)
            yield* promise(() => page.setViewportSize({ width: 360, height: 800 }))
            yield* promise(() => assertAccessible(page, "rotate secret: the new secret, at 360 px"))
            yield* promise(() => page.getByRole("button", { name: "Done" }).click())
            yield* promise(() => question.waitFor())
            yield* promise(() => assertAccessible(page, "rotate secret: did you save it, at 360 px"))
            yield* promise(() => page.getByRole("button", { name: "Yes, close" }).click())
            yield* promise(() => page.setViewportSize({ width: 1280, height: 800 }))
            assert.strictEqual(yield* promise(() => shown.count()), 0)
            assert.strictEqual(yield* promise(() => question.count()), 0)

            const before = receiver.received("/hook").length
            yield* publish()
            const [next] = yield* eventually(
              Effect.sync(() => receiver.received("/hook").slice(before)),
              (requests) => requests.some((r) => JSON.parse(r.body.toString("utf8")).event === EVENT),
            )
            const verified = verifySignature(next!.headers, next!.body, [secret, newSecret])
            assert.strictEqual(verified.signatures.length, 2)
            assert.sameMembers(verified.verifiedBy, [secret, newSecret])
          }),
        TIMEOUT,
      )

      it.effect(
        "an admin creates a viewer, who sees no Retry button and whom the API refuses with 403",
        () =>
          Effect.gen(function* () {
            const { page, origin, endpointId } = yield* E2e
            yield* promise(() => page.getByRole("link", { name: "Operators" }).click())
            yield* heading(page, "Operators")
            const email = `viewer-${endpointId}@console.test`
            yield* promise(() => page.getByLabel("Email").fill(email))
            yield* promise(() => page.getByLabel("Role", { exact: true }).selectOption("viewer"))
            yield* promise(() => page.getByRole("button", { name: "Create operator" }).click())
            const password = (yield* promise(() => page.getByTestId("new-password").innerText())).trim()
            yield* promise(() => page.getByRole("cell", { name: email }).waitFor())
            yield* screenshot(page, "operators")
            yield* signOut(page)

            yield* signIn(page, origin, { email, password, role: "viewer" })
            assert.strictEqual(yield* promise(() => page.getByRole("link", { name: "Operators" }).count()), 0)
            assert.strictEqual(
              yield* promise(() => page.getByRole("button", { name: "Retry all matching" }).count()),
              0,
            )
            const [delivery] = yield* awaitDeliveries(endpointId, (rows) => rows.length > 0)
            yield* promise(() => page.goto(`${origin}/deliveries/${delivery!.id}`))
            yield* heading(page, new RegExp(`Delivery #${delivery!.id}`))
            assert.strictEqual(yield* promise(() => page.getByRole("button", { name: "Retry" }).count()), 0)
            const refused = yield* apiFromPage(page, "POST", `/api/deliveries/${delivery!.id}/retry`, {})
            assert.deepStrictEqual(refused, { status: 403, text: `{"message":"Forbidden"}` })
            const operators = yield* apiFromPage(page, "GET", "/api/operators")
            assert.deepStrictEqual(operators, { status: 403, text: `{"message":"Forbidden"}` })

            yield* promise(() => page.goto(`${origin}/endpoints/${endpointId}`))
            yield* heading(page, /test endpoint/)
            assert.strictEqual(yield* promise(() => page.getByRole("button", { name: "Suspend" }).count()), 0)
            assert.strictEqual(
              yield* promise(() => page.getByRole("button", { name: "Send test event" }).count()),
              0,
            )
          }),
        TIMEOUT,
      )

      it.effect(
        "reads an endpoint that fails as failing, lists twenty endpoints densely, copies a URL, accessibly",
        () =>
          Effect.gen(function* () {
            const { browser, page, origin } = yield* E2e
            const down = yield* receiverEndpoint("initech", "/down", [EVENT])
            down.receiver.respond("/down", () => ({ status: 500 }))
            for (let i = 0; i < 3; i++) yield* publishEvent(EVENT, "initech", examplePayload(EVENT))
            yield* awaitDeliveries(
              down.endpointId,
              (rows) => rows.length === 3 && rows.every((row) => row.status === "failed"),
            )
            // Nineteen quiet endpoints more on the same subscriber: a page of twenty.
            for (let i = 0; i < 19; i++)
              yield* endpoint(down.subscriber.id, down.receiver.url(`/quiet/${i}`), [EVENT])

            yield* promise(() => browser.grantPermissions(["clipboard-read", "clipboard-write"], { origin }))
            yield* promise(() => page.setViewportSize({ width: 1280, height: 800 }))
            yield* promise(() => page.goto(`${origin}/endpoints?owner=initech`))
            const failing = page.locator(`tr[data-endpoint-id="${down.endpointId}"]`)
            // Two attempts for each of the three deliveries, none answered 2xx.
            yield* promise(() =>
              failing.locator(".badge.badge-failing", { hasText: "failing · 0% · 6 failures" }).waitFor(),
            )
            assert.strictEqual(
              yield* promise(() => failing.getByTestId("success-rate").innerText()),
              "0.0 % of 6",
            )
            // The p95 is shown as the histogram slot it lies in, with the estimate on hover.
            const p95 = failing.getByTestId("p95")
            assert.match(yield* promise(() => p95.innerText()), /^[\d,]+–[\d,]+ ms$/)
            assert.match(
              (yield* promise(() => p95.getAttribute("title"))) ?? "",
              /^Estimated \d+ ms, within [\d,]+–[\d,]+ ms$/,
            )
            const quiet = page.locator("tr[data-endpoint-id]").first()
            assert.strictEqual(yield* promise(() => quiet.locator(".badge").innerText()), "active")

            yield* assertTwentyRowsFit(page, "tr[data-endpoint-id]")
            yield* screenshot(page, "endpoints-list")
            yield* promise(() => assertAccessible(page, "endpoints list at 1280 px"))

            const copy = page.getByRole("button", {
              name: `Copy destination URL of endpoint ${down.endpointId}`,
              exact: true,
            })
            yield* promise(() => copy.click())
            yield* promise(() => copy.getByText("Copied").waitFor())
            assert.strictEqual(yield* clipboardText(page), down.receiver.url("/down"))

            yield* promise(() => page.setViewportSize({ width: 768, height: 1024 }))
            yield* promise(() => page.reload())
            yield* promise(() =>
              failing.locator(".badge.badge-failing", { hasText: "failing · 0% · 6 failures" }).waitFor(),
            )
            yield* screenshot(page, "endpoints-list-768")
            yield* promise(() => assertAccessible(page, "endpoints list at 768 px"))
            yield* promise(() => page.setViewportSize({ width: 360, height: 800 }))
            yield* promise(() => assertAccessible(page, "endpoints list at 360 px"))
            yield* promise(() => page.setViewportSize({ width: 1280, height: 900 }))
          }),
        TIMEOUT,
      )

      it.effect(
        "shows viewers and operators custom header names with masked values; an admin reveals one, audited",
        () =>
          Effect.gen(function* () {
            const { page, origin, operator, admin, endpointId } = yield* E2e
            const credential = "e2e-receiver-credential"
            const viewer = yield* operatorAccount(service.env, "viewer", "masked")
            const as = (account: OperatorAccount) =>
              Effect.andThen(
                promise(() => page.context().clearCookies()),
                signIn(page, origin, account),
              )
            yield* as(admin)
            const set = yield* apiFromPage(page, "PUT", `/api/endpoints/${endpointId}/headers`, {
              custom_headers: { "X-Receiver-Key": credential },
            })
            assert.strictEqual(set.status, 200, set.text)
            const [delivery] = yield* awaitDeliveries(endpointId, (rows) => rows.length > 0)

            for (const account of [viewer, operator]) {
              yield* as(account)
              yield* promise(() => page.goto(`${origin}/endpoints/${endpointId}`))
              yield* heading(page, /test endpoint/)
              yield* promise(() => page.getByRole("rowheader", { name: "X-Receiver-Key" }).waitFor())
              assert.notInclude(yield* promise(() => page.content()), credential, account.role)
              assert.strictEqual(
                yield* promise(() => page.getByRole("button", { name: /Reveal/ }).count()),
                0,
              )
              if (account === viewer) yield* promise(() => assertAccessible(page, "masked custom headers"))
              yield* promise(() => page.goto(`${origin}/deliveries/${delivery!.id}`))
              yield* heading(page, new RegExp(`Delivery #${delivery!.id}`))
              yield* promise(() => page.getByRole("rowheader", { name: "x-receiver-key" }).waitFor())
              assert.notInclude(yield* promise(() => page.content()), credential, account.role)
              assert.strictEqual(
                yield* promise(() => page.getByRole("button", { name: /Reveal/ }).count()),
                0,
              )
              for (const path of [`/api/endpoints/${endpointId}`, `/api/deliveries/${delivery!.id}`]) {
                const answer = yield* apiFromPage(page, "GET", path)
                assert.strictEqual(answer.status, 200, answer.text)
                assert.notInclude(answer.text, credential, `${account.role} ${path}`)
              }
            }

            yield* as(admin)
            yield* promise(() => page.goto(`${origin}/endpoints/${endpointId}`))
            yield* heading(page, /test endpoint/)
            yield* promise(() => page.getByRole("rowheader", { name: "X-Receiver-Key" }).waitFor())
            assert.notInclude(yield* promise(() => page.content()), credential, "masked until revealed")
            yield* promise(() => page.getByRole("button", { name: "Reveal X-Receiver-Key" }).click())
            yield* promise(() => page.getByText(credential, { exact: true }).waitFor())
            yield* screenshot(page, "endpoint-header-revealed")
            yield* promise(() => assertAccessible(page, "revealed custom header"))
            const audit = yield* apiFromPage(page, "GET", "/api/audit")
            const entries = (JSON.parse(audit.text) as { entries: Array<{ actor: string; action: string }> })
              .entries
            assert.isTrue(
              entries.some((e) => e.actor === admin.email && e.action === "webhook_headers.reveal"),
              "the reveal is audited",
            )
            assert.notInclude(audit.text, credential)
          }),
        TIMEOUT,
      )

      it.effect(
        "says why an endpoint whose receiver never answers is slowed, accessibly",
        () =>
          Effect.gen(function* () {
            const { page, origin, operator } = yield* E2e
            const hanging = yield* receiverEndpoint("hooli", "/hangs", [EVENT])
            hanging.receiver.respond("/hangs", () => ({ status: 200, delayMs: 600_000 }))
            for (let i = 0; i < 4; i++) yield* publishEvent(EVENT, "hooli", examplePayload(EVENT))
            yield* promise(() => page.context().clearCookies())
            yield* signIn(page, origin, operator)
            yield* promise(() => page.goto(`${origin}/endpoints/${hanging.endpointId}`))
            yield* heading(page, /test endpoint/)
            // The page reads its health again as the attempts time out.
            const slowed = page.getByTestId("slowed")
            yield* promise(() => slowed.waitFor({ timeout: 60_000 }))
            assert.match(
              (yield* promise(() => slowed.innerText())).trim(),
              /^\d+ timeouts in a row; at most 2 attempts at once until it answers$/,
            )
            assert.strictEqual(
              yield* promise(() =>
                page
                  .getByRole("term")
                  .filter({ hasText: /^Slowed$/ })
                  .count(),
              ),
              1,
            )
            yield* screenshot(page, "endpoint-slowed")
            yield* promise(() => assertAccessible(page, "slowed endpoint"))
          }),
        TIMEOUT,
      )

      it.effect(
        "shows every one of these actions in the audit log",
        () =>
          Effect.gen(function* () {
            const { page, origin, operator, admin, endpointId } = yield* E2e
            yield* promise(() => page.goto(`${origin}/audit`))
            yield* heading(page, "Audit log")
            const entries = page.getByTestId("audit-entry")
            yield* promise(() => entries.first().waitFor())
            const rows = yield* promise(() => entries.allInnerTexts())
            const by = (actor: string, action: RegExp) =>
              rows.some((row) => row.includes(actor) && action.test(row))
            assert.isTrue(by(operator.email, /suspend|status/i), "suspend")
            assert.isTrue(by(operator.email, /test/i), "test event")
            assert.isTrue(by(admin.email, /rotate/i), "rotation")
            assert.isTrue(by(admin.email, /operator/i), "operator created")
            assert.isTrue(
              rows.some((row) => row.includes(String(endpointId))),
              "the endpoint as target",
            )
            yield* screenshot(page, "audit-endpoints")

            yield* promise(() => page.setViewportSize({ width: 768, height: 1024 }))
            yield* promise(() => page.goto(`${origin}/endpoints/${endpointId}`))
            yield* heading(page, /test endpoint/)
            yield* screenshot(page, "endpoint-tablet")
            // Every page of the file ran under the strict CSP without an error.
            assert.deepStrictEqual((yield* E2e).problems(), [])
          }),
        TIMEOUT,
      )
    },
  )
})

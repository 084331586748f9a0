import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import type { ListeningPorts } from "../../../backend/platform/Http.ts"
import { assertAccessible } from "../../support/Accessibility.ts"
import { launchBrowser } from "../../support/Browser.ts"
import { spawnProcess } from "../../support/ChildProcess.ts"
import {
  consoleBuilt,
  type OperatorAccount,
  operatorAccount,
  pageProblems,
  promise,
  screenshot,
  signIn,
} from "../../support/Console.ts"
import { freePort } from "../../support/Net.ts"
import { completeProspect, ENROLLMENT_HOST, postProspect, prospectSetUp } from "../../support/Prospects.ts"
import { type Receiver, startReceiver } from "../../support/Receiver.ts"
import { awaitDeliveries, endpoint, engineService, query, subscriber } from "../../support/WebhookEngine.ts"

/**
 * The partner API and the workers run in the test process; the console role runs in a process of its own, so the
 * test can stop and start it while deliveries go on. A partner's prospect (`POST /partners/:slug/prospects`) is
 * announced as `prospect.created`, which the owner's endpoint receives. A failed attempt is retried after two
 * backoff units (2 s here): long enough to see `retrying`, short enough to see it delivered.
 */
const workers = engineService({
  ROLES: "partner-api,workers",
  PARTNER_API_PORT: "0",
  PUBLIC_BASE_URL: "https://partner-api.test",
  PARTNER_API_AUDIENCE: "urn:partner-service:partner-api",
  TOKEN_TTL_SECONDS: "",
  ENROLLMENT_HOST,
  WEBHOOK_BACKOFF_UNIT_MS: "1000",
})
const TIMEOUT = 240_000
const SOURCE = "live-pms"
const root = fileURLToPath(new URL("../../..", import.meta.url))

/** The console role (`backend/main.ts`) on `port`, once it has logged that it started. */
const consoleProcess = (port: number) =>
  Effect.gen(function* () {
    const child = yield* spawnProcess(process.execPath, ["backend/main.ts"], {
      cwd: root,
      env: { ...workers.env, ROLES: "console", CONSOLE_PORT: String(port), LOG_LEVEL: "info" },
    })
    yield* child.waitFor("stdout", /started/)
    return child
  })

class E2e extends Context.Service<
  E2e,
  {
    readonly browser: BrowserContext
    readonly page: Page
    readonly problems: () => ReadonlyArray<string>
    readonly port: number
    readonly origin: string
    readonly viewer: OperatorAccount
    readonly receiver: Receiver
    readonly endpointId: number
    /** Sends a new prospect through the partner API: one `prospect.created` delivery. */
    readonly newProspect: () => Effect.Effect<void, never, ListeningPorts>
  }
>()("test/e2e/console/live/E2e") {
  static readonly layer = Layer.effect(
    E2e,
    Effect.gen(function* () {
      const { partner, slug } = yield* prospectSetUp("live-org", SOURCE)
      const [ownerRow] = yield* query(
        (sql) => sql<Array<{ id: string }>>`select id::text from owners where slug = ${slug}`,
      )
      const receiver = yield* startReceiver
      const sub = yield* subscriber({ ownerId: ownerRow!.id })
      const endpointId = yield* endpoint(sub.id, receiver.url("/hook"), ["prospect.created"])
      let sent = 0
      const newProspect = () =>
        Effect.gen(function* () {
          const answer = yield* postProspect(partner, slug, completeProspect(SOURCE, `p-${++sent}`))
          assert.strictEqual(answer.body.status_code, 201, answer.text)
        })
      yield* consoleBuilt
      const browser = yield* launchBrowser()
      const page = yield* promise(() => browser.newPage())
      page.setDefaultTimeout(30_000)
      const viewer = yield* operatorAccount(workers.env, "viewer", "live")
      const port = yield* Effect.promise(freePort)
      return {
        browser,
        page,
        problems: pageProblems(page),
        port,
        origin: `http://127.0.0.1:${port}`,
        viewer,
        receiver,
        endpointId,
        newProspect,
      }
    }),
  )
}

const rowOf = (page: Page, id: string) => page.locator(`tr[data-delivery-id="${id}"]`)
const liveStatus = (page: Page) => page.getByTestId("live-status")

describe("console: live updates", () => {
  layer(E2e.layer.pipe(Layer.provideMerge(workers.layer)), { excludeTestServices: true, timeout: 300_000 })(
    (it) => {
      it.effect(
        "a new delivery appears on the open deliveries page and turns from retrying to delivered in place",
        () =>
          Effect.gen(function* () {
            const { page, port, origin, viewer, receiver, endpointId, newProspect } = yield* E2e
            yield* consoleProcess(port)
            yield* signIn(page, origin, viewer)
            yield* promise(() => liveStatus(page).getByText("Live · up to date").waitFor())
            // Marks this document: a reload would lose the mark.
            yield* promise(() =>
              page.evaluate(() => void ((globalThis as unknown as { mark: string }).mark = "open")),
            )

            receiver.respond("/hook", () => ({ status: 503, body: "warming up" }))
            yield* newProspect()
            const [delivery] = yield* awaitDeliveries(endpointId, (rows) => rows.length === 1)
            const row = rowOf(page, delivery!.id)
            yield* promise(() => row.waitFor({ timeout: 2_000 }))
            yield* promise(() => row.locator(".badge", { hasText: "retrying" }).waitFor())
            yield* promise(() => row.evaluate((el) => void (el.dataset.seen = "retrying")))
            yield* screenshot(page, "deliveries-live-retrying")

            receiver.respond("/hook", () => ({ status: 200, body: "ok" }))
            yield* promise(() => row.locator(".badge", { hasText: "delivered" }).waitFor())
            // The same row element and the same document: changed in place, not redrawn by a reload.
            assert.strictEqual(yield* promise(() => row.getAttribute("data-seen")), "retrying")
            assert.strictEqual(
              yield* promise(() => page.evaluate(() => (globalThis as unknown as { mark?: string }).mark)),
              "open",
            )
            assert.strictEqual(yield* promise(() => page.locator("tr[data-delivery-id]").count()), 1)
          }),
        TIMEOUT,
      )

      it.effect(
        "shows it is disconnected while the console is down, then catches up with no row twice",
        () =>
          Effect.gen(function* () {
            const { page, port, origin, viewer, receiver, endpointId, newProspect } = yield* E2e
            receiver.respond("/hook", () => ({ status: 200, body: "ok" }))
            const first = yield* consoleProcess(port)
            yield* promise(() => page.goto(`${origin}/deliveries`))
            // The previous process's session is in the database: still signed in, unless the page asks again.
            if (page.url().includes("/login")) yield* signIn(page, origin, viewer)
            yield* promise(() => liveStatus(page).getByText("Live · up to date").waitFor())
            const before = (yield* awaitDeliveries(endpointId, () => true)).length

            yield* first.signal("SIGTERM")
            yield* first.exited
            yield* promise(() =>
              liveStatus(page)
                .getByText(/disconnected/i)
                .waitFor(),
            )
            yield* screenshot(page, "deliveries-live-disconnected")
            yield* promise(() => assertAccessible(page, "deliveries, disconnected"))

            // While the console is away, partners' requests and deliveries go on.
            for (let i = 0; i < 3; i++) yield* newProspect()
            const rows = yield* awaitDeliveries(
              endpointId,
              (rows) => rows.length === before + 3 && rows.every((row) => row.status === "delivered"),
            )

            yield* consoleProcess(port)
            yield* promise(() => liveStatus(page).getByText("Live · up to date").waitFor({ timeout: 60_000 }))
            for (const row of rows) {
              yield* promise(() => rowOf(page, row.id).locator(".badge", { hasText: "delivered" }).waitFor())
            }
            const shown = yield* promise(() =>
              page
                .locator("tr[data-delivery-id]")
                .evaluateAll((trs) => trs.map((tr) => tr.dataset.deliveryId)),
            )
            assert.strictEqual(new Set(shown).size, shown.length, `a row shown twice: ${shown.join(", ")}`)
            assert.sameMembers(
              shown,
              rows.map((row) => row.id),
            )
            yield* screenshot(page, "deliveries-live-caught-up")
            yield* promise(() => assertAccessible(page, "deliveries, live"))
            assert.deepStrictEqual((yield* E2e).problems(), [])
          }),
        TIMEOUT,
      )
    },
  )
})

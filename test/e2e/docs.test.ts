import { existsSync } from "node:fs"
import { mkdir, mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { appLayer } from "../../backend/App.ts"
import { Auth } from "../../backend/auth/Auth.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { CHROMIUM } from "../support/Browser.ts"
import { freePort } from "../support/Net.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"

const SCREENSHOT = path.join(process.cwd(), ".data", "screenshots", "docs.png")

/** Debian's chromium, never a downloaded browser; a fresh profile each time, removed afterwards. */
const browser = Effect.acquireRelease(
  Effect.promise(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `Chromium is missing at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set ` +
          "CHROMIUM_PATH; `npm test` installs it when run as root with apt.",
      )
    }
    const profile = await mkdtemp(path.join(tmpdir(), "docs-chromium-"))
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
      viewport: { width: 1280, height: 900 },
    })
    return { context, profile }
  }),
  ({ context, profile }) =>
    Effect.promise(async () => {
      await context.close()
      await rm(profile, { recursive: true, force: true })
    }),
)

interface Visit {
  readonly page: Page
  readonly requests: ReadonlyArray<string>
  readonly problems: ReadonlyArray<string>
}

/** Opens `url`, recording every request the page makes and every console error or CSP violation. */
const visit = (context: BrowserContext, url: string) =>
  Effect.promise(async (): Promise<Visit> => {
    const page = await context.newPage()
    const requests: Array<string> = []
    const problems: Array<string> = []
    page.on("request", (request) => void requests.push(request.url()))
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text())
    })
    page.on("pageerror", (error) => void problems.push(error.message))
    await page.goto(url, { waitUntil: "load" })
    return { page, requests, problems }
  })

// A fixed port, so the document's token URL (from PUBLIC_BASE_URL) is the one the page can reach.
const PORT = await freePort()
const service = Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer)).pipe(
  Layer.provideMerge(
    isolationLayer(
      isolatedEnv({
        ROLES: "partner-api",
        PARTNER_API_PORT: String(PORT),
        PUBLIC_BASE_URL: `http://127.0.0.1:${PORT}`,
      }),
    ),
  ),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

describe("the docs page in headless Chromium", () => {
  layer(service, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "renders every operation and webhook of the document without leaving the machine",
      () =>
        Effect.gen(function* () {
          const port = (yield* Effect.service(ListeningPorts)).get("partner-api")!
          const origin = `http://127.0.0.1:${port}`
          const document = yield* Effect.promise(() =>
            fetch(`${origin}/openapi.json`).then(
              (r) =>
                r.json() as Promise<{
                  paths: Record<string, Record<string, { summary: string }>>
                  webhooks: object
                }>,
            ),
          )
          const { context } = yield* browser
          const { page, requests, problems } = yield* visit(context, `${origin}/docs`)

          const shown = yield* Effect.promise(async () => {
            await page.locator(".opblock").first().waitFor({ state: "visible", timeout: 20_000 })
            await page.getByText("move_out.initiated", { exact: true }).first().waitFor({ timeout: 20_000 })
            return {
              title: await page.locator(".info .title").innerText(),
              paths: await page.locator(".opblock-summary-path").allInnerTexts(),
              summaries: await page.locator(".opblock-summary-description").allInnerTexts(),
              body: await page.locator("#swagger-ui").innerText(),
            }
          })

          assert.include(shown.title, "Partner API")
          const normalized = shown.paths.map((text) => text.replace(/\u200b/g, "").trim())
          for (const name of Object.keys(document.webhooks))
            assert.include(normalized, name, `webhook ${name}`)
          const routes = Object.entries(document.paths).flatMap(([p, methods]) =>
            Object.values(methods).map((operation) => ({ path: p, summary: operation.summary })),
          )
          assert.isNotEmpty(routes, "the document has routes to show")
          for (const route of routes) {
            assert.include(normalized, route.path, `path ${route.path}`)
            assert.include(shown.summaries, route.summary, `summary of ${route.path}`)
          }
          assert.include(shown.body, "Authorize", "the OAuth2 scheme offers to authorize")

          // Expanding a webhook shows its envelope, generated from the event's schema.
          yield* Effect.promise(async () => {
            const webhook = page.locator(".opblock", { hasText: "policy.documents_updated" }).first()
            await webhook.locator(".opblock-summary").click()
            await webhook.getByText("property_owner_slug").first().waitFor({ timeout: 10_000 })
          })

          yield* Effect.promise(async () => {
            await mkdir(path.dirname(SCREENSHOT), { recursive: true })
            await page.screenshot({ path: SCREENSHOT, fullPage: true })
          })

          // The Authorize dialog offers the client-credentials flow with the scopes of the document.
          const dialog = yield* Effect.promise(async () => {
            await page.locator(".auth-wrapper .authorize").click()
            const modal = page.locator(".modal-ux")
            await modal.getByText("clientCredentials").first().waitFor({ timeout: 10_000 })
            await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, "-authorize.png") })
            return modal.innerText()
          })
          assert.match(dialog, /Token URL:?\s*\S+\/token/)
          for (const scope of ["prospects:write", "webhooks:manage"]) assert.include(dialog, scope)

          // And it obtains a token with a real client's credentials (the audience rides in the query).
          const client = yield* (yield* Auth).createClient({ gateway: "partner", name: "docs reader" })
          const authorized = yield* Effect.promise(async () => {
            const modal = page.locator(".modal-ux")
            const credentials = modal.locator('input:not([type="checkbox"])')
            await credentials.nth(0).fill(client.clientId)
            await credentials.nth(1).fill(client.clientSecret)
            const tokenAnswer = page.waitForResponse((response) => response.url().includes("/token"))
            await modal.locator("button.modal-btn.authorize").first().click()
            const answer = await tokenAnswer
            await modal.getByText("Logout").first().waitFor({ timeout: 10_000 })
            return answer.status()
          })
          assert.strictEqual(authorized, 200, "the Authorize dialog got a token")

          assert.isNotEmpty(requests)
          const elsewhere = requests.filter(
            (url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:"),
          )
          assert.deepStrictEqual(elsewhere, [], "every request stays on this machine")
          assert.include(requests, `${origin}/openapi.json`)
          assert.deepStrictEqual(problems, [], "no console error or CSP violation")
        }).pipe(Effect.scoped),
      60_000,
    )
  })
})

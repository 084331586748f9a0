import { randomBytes } from "node:crypto"
import { mkdir } from "node:fs/promises"
import path from "node:path"
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { ensureConsoleBuilt } from "../../console/build.mjs"
import { gatewayPort } from "./Auth.ts"
import { launchBrowser } from "./Browser.ts"
import { runCli } from "./Cli.ts"
import { engineService } from "./WebhookEngine.ts"

/**
 * The service for console browser tests, in the test process: the console role (site and operator API) and the
 * workers (webhook router, delivery, bulk retries) on a database and subject prefix of their own, trusting the
 * test receiver's CA. Deliveries fail for good after two attempts with a tiny backoff, so a failing receiver
 * gives `failed` deliveries quickly.
 */
export const consoleService = (overrides: Record<string, string> = {}) =>
  engineService({
    ROLES: "console,workers",
    CONSOLE_PORT: "0",
    SERVICE_ENV: "development",
    WEBHOOK_MAX_ATTEMPTS: "2",
    ...overrides,
  })

/** The console's build, made when missing or stale (npm test does it first; a single file run may not have). */
export const consoleBuilt = Effect.promise(() => ensureConsoleBuilt())

export const consoleOrigin = Effect.map(gatewayPort("console"), (port) => `http://127.0.0.1:${port}`)

/**
 * The console in a browser, for a test file's scope: the build made when stale, one browser and its page (a step
 * that never comes fails with what it waited for after 30 s, well before a test's own timeout), what went wrong
 * inside the page, and the console's origin.
 */
export const openConsoleWith = (options: Parameters<typeof launchBrowser>[0]) =>
  Effect.gen(function* () {
    yield* consoleBuilt
    const browser = yield* launchBrowser(options)
    const page = yield* promise(() => browser.newPage())
    page.setDefaultTimeout(30_000)
    return { browser, page, problems: pageProblems(page), origin: yield* consoleOrigin }
  })

export const openConsole = openConsoleWith({})

export interface OperatorAccount {
  readonly email: string
  readonly password: string
  readonly role: "viewer" | "operator" | "admin"
}

/** An operator account made as an admin makes one on the command line, with a password of the test's own. */
export const operatorAccount = (
  env: Record<string, string>,
  role: OperatorAccount["role"],
  name: string = role,
) =>
  Effect.gen(function* () {
    const email = `${name}-${randomBytes(3).toString("hex")}@console.test`
    const password = `pw-${randomBytes(12).toString("hex")}`
    const run = yield* runCli(
      env,
      "operators",
      "create",
      "--email",
      email,
      "--role",
      role,
      "--password",
      password,
    )
    if (run.code !== 0)
      return yield* Effect.die(new Error(`operators create failed: ${run.stderr}${run.stdout}`))
    return { email, password, role } satisfies OperatorAccount
  })

const SCREENSHOTS = path.join(process.cwd(), ".data", "screenshots", "console")

/** Saves the page as it looks now as `.data/screenshots/console/<name>.png`. */
export const screenshot = (page: Page, name: string) =>
  Effect.promise(async () => {
    await mkdir(SCREENSHOTS, { recursive: true })
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
  })

export const promise = <A>(run: () => Promise<A>) => Effect.promise(run)

/** Signs in on the sign-in page as a person does (Enter in the password field), and waits for the deliveries page. */
export const signIn = (page: Page, origin: string, account: OperatorAccount) =>
  promise(async () => {
    await page.goto(`${origin}/login`)
    await page.getByLabel("Email").fill(account.email)
    await page.getByLabel("Password").fill(account.password)
    // From the keyboard, as the form is meant to be usable.
    await page.getByLabel("Password").press("Enter")
    await page.getByRole("heading", { level: 1, name: "Deliveries" }).waitFor()
  })

export const signOut = (page: Page) =>
  promise(async () => {
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("button", { name: "Sign in" }).waitFor()
  })

/** A call to the operator API from the signed-in page (its cookie), with the page's CSRF token when it has one. */
export const apiFromPage = (page: Page, method: string, apiPath: string, body?: unknown) =>
  promise(() =>
    page.evaluate(
      async ({ method, apiPath, body }) => {
        const session = (await fetch("/api/session").then((r) => (r.ok ? r.json() : null))) as {
          csrf_token?: string
        } | null
        const response = await fetch(apiPath, {
          method,
          headers: {
            "content-type": "application/json",
            ...(session?.csrf_token ? { "x-csrf-token": session.csrf_token } : {}),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
        return { status: response.status, text: await response.text() }
      },
      { method, apiPath, body },
    ),
  )

/**
 * What went wrong inside the page: uncaught errors, and anything the browser refused under the Content-Security-
 * Policy (an inline script or style, a resource from elsewhere). A refused API call's own console line is not one.
 */
export const pageProblems = (page: Page) => {
  const problems: Array<string> = []
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`))
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console: ${message.text()}`)
    }
  })
  return () => [...problems]
}

interface Box {
  readonly top: number
  readonly bottom: number
  readonly height: number
}
interface Boxed {
  readonly getBoundingClientRect: () => Box
}
interface ListRow extends Boxed {
  readonly cells: Iterable<Boxed & { readonly innerText: string }>
  readonly closest: (selector: string) => Boxed | null
}
/** The little of the browser `listLayout` reads (this project's tests are typed without the DOM). */
interface ListPage {
  readonly document: { readonly querySelectorAll: (selector: string) => Iterable<ListRow> }
  readonly getComputedStyle: (cell: unknown) => {
    readonly lineHeight: string
    readonly paddingTop: string
    readonly paddingBottom: string
  }
}

/**
 * How a list's first `count` rows lie in the page: whether any of their cells wraps (a cell taller than one line of
 * its text and its padding), and the height from the top of their table's header to the bottom of the last row
 * (what a screen must hold to show them, scrolled to the list).
 */
const listLayout = (page: Page, rowSelector: string, count: number) =>
  promise(() =>
    page.evaluate(
      ({ rowSelector, count }) => {
        const inPage = globalThis as unknown as ListPage
        const rows = [...inPage.document.querySelectorAll(rowSelector)].slice(0, count)
        const wrapped: Array<string> = []
        for (const row of rows) {
          for (const cell of row.cells) {
            const style = inPage.getComputedStyle(cell)
            const oneLine =
              parseFloat(style.lineHeight) + parseFloat(style.paddingTop) + parseFloat(style.paddingBottom)
            // A badge or a copy button may add a pixel or two to a line, never a second line.
            if (cell.getBoundingClientRect().height > oneLine * 1.5) wrapped.push(cell.innerText)
          }
        }
        const top = rows[0]?.closest("table")?.getBoundingClientRect().top ?? 0
        const bottom = rows.at(-1)?.getBoundingClientRect().bottom ?? 0
        return { rows: rows.length, wrapped, height: bottom - top }
      },
      { rowSelector, count },
    ),
  )

/**
 * A dense list's first twenty rows (`rowSelector`) at 1280 x 800: none of their cells wraps, and with their header
 * they take at most 600 px, so they fit on the first screen under the page's header and filters.
 */
export const assertTwentyRowsFit = (page: Page, rowSelector: string) =>
  Effect.gen(function* () {
    yield* promise(() => page.locator(rowSelector).nth(19).waitFor())
    const layout = yield* listLayout(page, rowSelector, 20)
    assert.strictEqual(layout.rows, 20)
    assert.deepStrictEqual(layout.wrapped, [], "no cell of the first twenty rows wraps")
    assert.isAtMost(
      layout.height,
      600,
      "twenty rows and their header take at most 600 of the screen's 800 px",
    )
  })

interface ClipboardPage {
  readonly navigator: { readonly clipboard: { readonly readText: () => Promise<string> } }
}

/** What the page's clipboard holds (its browser context granted `clipboard-read`). */
export const clipboardText = (page: Page) =>
  promise(() => page.evaluate(() => (globalThis as unknown as ClipboardPage).navigator.clipboard.readText()))

interface OverflowElement {
  readonly tagName: string
  readonly id: string
  readonly className: unknown
  readonly children: Iterable<OverflowElement>
  readonly getBoundingClientRect: () => { readonly right: number; readonly width: number }
}
interface OverflowPage {
  readonly document: {
    readonly body: OverflowElement
    readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number }
  }
  readonly getComputedStyle: (element: unknown) => { readonly overflowX: string }
}

/**
 * What makes the page scroll sideways: empty when it does not, else the outermost elements reaching past the
 * window's right edge (a box that scrolls its own content sideways is looked into no further).
 */
export const sidewaysOverflow = (page: Page) =>
  promise(() =>
    page.evaluate(() => {
      const inPage = globalThis as unknown as OverflowPage
      const root = inPage.document.documentElement
      if (root.scrollWidth <= root.clientWidth) return []
      const found: Array<string> = []
      const visit = (element: OverflowElement) => {
        const rect = element.getBoundingClientRect()
        if (rect.right > root.clientWidth + 0.5) {
          const own = [...element.children].filter(
            (child) => child.getBoundingClientRect().right > root.clientWidth + 0.5,
          )
          if (own.length === 0 || found.length > 10) {
            found.push(
              `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ""}.${String(element.className)} (${Math.round(rect.width)} px)`,
            )
            return
          }
        }
        if (inPage.getComputedStyle(element).overflowX !== "visible") return
        for (const child of element.children) visit(child)
      }
      visit(inPage.document.body)
      return found.length > 0 ? found : [`the page is ${root.scrollWidth} px wide`]
    }),
  )

/** What the table checks read of the page inside it. */
export interface TableWindow {
  readonly document: {
    readonly querySelectorAll: (selector: string) => Iterable<{
      readonly scrollWidth: number
      readonly clientWidth: number
      readonly getAttribute: (name: string) => string | null
    }>
  }
  readonly getComputedStyle: (element: unknown) => { readonly display: string }
}

/** Each table region that scrolls sideways, by its name, and each whose rows are not cards. */
export const tableLayout = (page: Page) =>
  promise(() =>
    page.evaluate(() => {
      const window = globalThis as unknown as TableWindow
      const wraps = [...window.document.querySelectorAll(".table-wrap")]
      const rows = [...window.document.querySelectorAll(".table-wrap tbody tr")]
      return {
        tables: wraps.length,
        scrolling: wraps
          .filter((wrap) => wrap.scrollWidth > wrap.clientWidth + 1)
          .map(
            (wrap) => `${wrap.getAttribute("aria-label")}: ${wrap.scrollWidth} px in ${wrap.clientWidth} px`,
          ),
        rowsNotCards: rows.filter((row) => window.getComputedStyle(row).display !== "block").length,
      }
    }),
  )

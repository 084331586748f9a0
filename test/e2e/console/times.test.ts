import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import { AuditChannel, recordAudit } from "../../../backend/audit/Audit.ts"
import { Db } from "../../../backend/platform/Db.ts"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  consoleService,
  openConsoleWith,
  type OperatorAccount,
  operatorAccount,
  promise,
  screenshot,
  signIn,
} from "../../support/Console.ts"

const service = consoleService()
const TIMEOUT = 120_000
const ENTRIES = 15
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A browser in Los Angeles (so local time and UTC differ), and an admin. */
class E2e extends Context.Service<
  E2e,
  {
    readonly browser: BrowserContext
    readonly page: Page
    readonly problems: () => ReadonlyArray<string>
    readonly origin: string
    readonly admin: OperatorAccount
  }
>()("test/e2e/console/times/E2e") {
  static readonly layer = Layer.effect(
    E2e,
    Effect.gen(function* () {
      return {
        ...(yield* openConsoleWith({ timezoneId: "America/Los_Angeles" })),
        admin: yield* operatorAccount(service.env, "admin"),
      }
    }),
  )
}

const heading = (page: Page, text: string | RegExp) =>
  promise(() => page.getByRole("heading", { level: 1, name: text }).waitFor())

/** The first entry's time as shown, and its hover text. */
const firstTime = (page: Page) =>
  promise(async () => {
    const time = page.getByTestId("audit-entry").first().locator("time")
    return { text: (await time.innerText()).trim(), title: (await time.getAttribute("title")) ?? "" }
  })

describe("console: the audit log's order and the times' zone", () => {
  layer(E2e.layer.pipe(Layer.provideMerge(service.layer)), { excludeTestServices: true, timeout: 300_000 })(
    (it) => {
      it.effect(
        "the audit page lists fifteen entries newest first",
        () =>
          Effect.gen(function* () {
            const { page, origin, admin } = yield* E2e
            const db = yield* Db
            for (let i = 1; i <= ENTRIES; i++) {
              yield* recordAudit(db, { actor: "cli:e2e", action: "e2e.order", target: `item:${i}` }).pipe(
                Effect.provideService(AuditChannel, "cli"),
              )
            }
            yield* signIn(page, origin, admin)
            yield* promise(() => page.goto(`${origin}/audit?action=e2e.order`))
            yield* heading(page, "Audit log")
            const entries = page.getByTestId("audit-entry")
            yield* promise(() => entries.nth(ENTRIES - 1).waitFor())
            const targets = yield* promise(() => entries.locator("td:nth-child(5)").allInnerTexts())
            assert.deepStrictEqual(
              targets.map((t) => t.trim()),
              Array.from({ length: ENTRIES }, (_, i) => `item:${ENTRIES - i}`),
            )
            yield* screenshot(page, "audit-order")
          }),
        TIMEOUT,
      )

      it.effect(
        "times show a zone, and the UTC toggle changes them and is remembered",
        () =>
          Effect.gen(function* () {
            const { page, origin } = yield* E2e
            yield* promise(() => page.goto(`${origin}/audit?action=e2e.order`))
            yield* heading(page, "Audit log")
            const local = yield* firstTime(page)
            // Los Angeles: Pacific time, standard or daylight.
            assert.match(local.text, / P[SD]T$/, local.text)
            assert.match(local.title, ISO)
            const filterLabel = (name: string) => page.locator("label", { hasText: new RegExp(`^${name} `) })
            assert.match(yield* promise(() => filterLabel("Since").innerText()), /Since \(P[SD]T\)/)

            yield* promise(() =>
              page.getByRole("group", { name: "Show times in" }).getByRole("button", { name: "UTC" }).click(),
            )
            const utc = yield* firstTime(page)
            assert.match(utc.text, / UTC$/, utc.text)
            assert.notStrictEqual(utc.text, local.text)
            assert.strictEqual(utc.title, local.title)
            // The hour shown is the ISO time's own.
            const hour = Number(local.title.slice(11, 13))
            const shownHour = Number(/(\d{1,2}):\d{2}:\d{2}/.exec(utc.text)![1]) % 12
            assert.strictEqual(shownHour, hour % 12, `${utc.text} for ${local.title}`)
            assert.match(yield* promise(() => filterLabel("Since").innerText()), /Since \(UTC\)/)
            yield* screenshot(page, "audit-utc")
            yield* promise(() => assertAccessible(page, "the audit page in UTC"))

            // Remembered: a new load of the console shows UTC still.
            yield* promise(() => page.reload())
            yield* heading(page, "Audit log")
            assert.match((yield* firstTime(page)).text, / UTC$/)
            yield* promise(() =>
              page
                .getByRole("group", { name: "Show times in" })
                .getByRole("button", { name: /^Local/ })
                .click(),
            )
            assert.strictEqual((yield* firstTime(page)).text, local.text)
            assert.deepStrictEqual((yield* E2e).problems(), [])
          }),
        TIMEOUT,
      )

      it.effect(
        "an invalid filter names the field and the form it expects; a missing policy is named",
        () =>
          Effect.gen(function* () {
            const { page, origin } = yield* E2e
            yield* promise(() => page.goto(`${origin}/deliveries?since=yesterday`))
            const problems = page.getByTestId("field-problems")
            yield* promise(() => problems.waitFor())
            assert.match(
              yield* promise(() => problems.innerText()),
              /since must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z/,
            )
            assert.strictEqual(
              yield* promise(() => page.getByRole("button", { name: "Try again" }).count()),
              0,
            )

            yield* promise(() => page.goto(`${origin}/policies/policy_123`))
            yield* promise(() => page.getByRole("alert").getByText("No policy policy_123.").waitFor())
            assert.notInclude(yield* promise(() => page.getByRole("alert").innerText()), "Could not load")
          }),
        TIMEOUT,
      )

      it.effect(
        "changing an operator's role asks first and says it happened",
        () =>
          Effect.gen(function* () {
            const { page, origin } = yield* E2e
            const other = yield* operatorAccount(service.env, "viewer", "promoted")
            yield* promise(() => page.goto(`${origin}/operators`))
            yield* heading(page, "Operators")
            const select = page.getByLabel(`Role of ${other.email}`)
            yield* promise(() => select.selectOption("operator"))
            const dialog = page.getByRole("dialog", { name: "Change role" })
            yield* promise(() => dialog.getByText(`Change ${other.email} from viewer to operator?`).waitFor())
            yield* promise(() => assertAccessible(page, "the operators page asking to change a role"))
            // Back: nothing changed, the select shows the role it has.
            yield* promise(() => dialog.getByRole("button", { name: "Back" }).click())
            assert.strictEqual(
              yield* promise(() => page.getByLabel(`Role of ${other.email}`).inputValue()),
              "viewer",
            )

            yield* promise(() => page.getByLabel(`Role of ${other.email}`).selectOption("operator"))
            yield* promise(() => dialog.getByRole("button", { name: "Make operator" }).click())
            yield* promise(() =>
              page
                .getByTestId("operator-done")
                .getByText(`${other.email} is now an operator`, { exact: false })
                .waitFor(),
            )
            assert.strictEqual(
              yield* promise(() => page.getByLabel(`Role of ${other.email}`).inputValue()),
              "operator",
            )
            yield* screenshot(page, "operators-role-changed")
          }),
        TIMEOUT,
      )
    },
  )
})

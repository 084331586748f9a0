import { createHash } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  apiFromPage,
  consoleService,
  openConsole,
  operatorAccount,
  promise,
  screenshot,
  signIn,
} from "../../support/Console.ts"
import { eventually } from "../../support/Streams.ts"
import { query, subscriber } from "../../support/WebhookEngine.ts"

const service = consoleService()

const namedOwner = (slug: string, name: string) =>
  query((sql) => sql`insert into owners (slug, name) values (${slug}, ${name}) returning id`).pipe(
    Effect.map(([row]) => String(row!.id)),
  )

/** Policies written as issue writes them: `count` of them, alternating the two owners, every third canceled. */
const policies = (owners: readonly [string, string], count: number) =>
  Effect.gen(function* () {
    const [card] = yield* query(
      (sql) => sql`
        insert into payment_methods (provider, reference, last4) values ('test', 'e2e-browse', '4242') returning id`,
    )
    for (let i = 1; i <= count; i++) {
      yield* query(
        (sql) => sql`
          insert into policies (policy_number, owner_id, status, product_type, cadence, premium_cents, payments,
                                coverage_amount_cents, coverage_start_date, coverage_end_date, payment_method_id,
                                insured_name, premises, unit_name, policy_holder_name, issued_on)
          values (${`E2E-${i}`}, ${owners[i % 2]!}, ${i % 3 === 0 ? "canceled" : "active"},
                  'security_deposit_insurance', 'upfront', 10000, 1, 100000, '2026-01-01', '2026-12-31',
                  ${card!.id}, ${`Renter ${i}`}, '1 Main St', '1A', ${`Renter ${i}`}, '2026-01-01')`,
      )
    }
  })

const heading = (page: Page, name: string) =>
  promise(() => page.getByRole("heading", { level: 1, name }).waitFor())

/** Axe-core at both widths, and a screenshot at each. */
const checked = (page: Page, name: string) =>
  Effect.gen(function* () {
    for (const width of [1280, 768]) {
      yield* promise(() => page.setViewportSize({ width, height: 1024 }))
      yield* promise(() => assertAccessible(page, `${name} at ${width} px`))
      yield* screenshot(page, `${name}-${width}`)
    }
    yield* promise(() => page.setViewportSize({ width: 1280, height: 1024 }))
  })

describe("console: search that forgives", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "the owner filter suggests owners as one types; policies are browsed under a filter kept in the URL",
      () =>
        Effect.gen(function* () {
          const north = yield* namedOwner("e2e-north", "Northern Lettings")
          const south = yield* namedOwner("e2e-south", "Southern Homes")
          yield* namedOwner("e2e-northwest", "Northwest Lettings")
          yield* policies([north, south], 14)
          const { page, origin, problems } = yield* openConsole
          yield* signIn(page, origin, yield* operatorAccount(service.env, "viewer"))

          // A part of a name is enough: both Lettings owners are suggested, by slug.
          yield* promise(() => page.locator("#f-owner").fill("letting"))
          const suggested = page.locator("#f-owner-list option")
          // The suggestions for what was typed last replace those of the empty field.
          yield* eventually(
            promise(() => suggested.count()),
            (n) => n === 2,
          )
          assert.deepStrictEqual(
            [
              yield* promise(() => suggested.nth(0).getAttribute("value")),
              yield* promise(() => suggested.nth(1).getAttribute("value")),
            ],
            ["e2e-north", "e2e-northwest"],
          )
          yield* checked(page, "deliveries-owner-suggest")

          yield* promise(() => page.getByRole("link", { name: "Policies", exact: true }).click())
          yield* heading(page, "Policies")
          const rows = page.getByRole("region", { name: "Policies table" }).locator("tbody tr")
          yield* promise(() => rows.nth(13).waitFor())
          assert.include(yield* promise(() => rows.first().innerText()), "E2E-14", "newest first")

          yield* promise(() => page.locator("#p-owner").fill("southern"))
          yield* promise(() => page.getByLabel("Status").selectOption("canceled"))
          yield* promise(() => page.getByRole("button", { name: "Apply filters" }).click())
          yield* promise(() => page.waitForURL(/owner=southern/))
          yield* promise(() => page.reload())
          yield* promise(() => rows.first().waitFor())
          // Odd numbers are the south's (i % 2 = 1), canceled every third: 3 and 9.
          yield* eventually(
            promise(() => rows.count()),
            (n) => n === 2,
          )
          assert.deepStrictEqual(
            [
              yield* promise(() => rows.nth(0).innerText()),
              yield* promise(() => rows.nth(1).innerText()),
            ].map((text) => text.split(/\s/)[0]),
            ["E2E-9", "E2E-3"],
          )
          assert.strictEqual(yield* promise(() => page.locator("#p-owner").inputValue()), "southern")
          yield* checked(page, "policies")
          assert.deepStrictEqual(problems(), [])
        }),
    )

    it.effect("an admin sees secrets by fingerprint and ends a rotation's overlap after confirming", () =>
      Effect.gen(function* () {
        const ownerId = yield* namedOwner("e2e-secrets", "Secret Keepers")
        const sub = yield* subscriber({ ownerId })
        const fingerprint = (secret: string) => createHash("sha256").update(secret).digest("hex").slice(0, 12)
        const { page, origin, problems } = yield* openConsole
        yield* signIn(page, origin, yield* operatorAccount(service.env, "admin", "secrets-admin"))
        const rotated = yield* apiFromPage(page, "POST", "/api/secrets/rotate", {
          owner: "e2e-secrets",
          overlap_hours: 24,
        })
        assert.strictEqual(rotated.status, 201, rotated.text)
        const next = (JSON.parse(rotated.text) as { secret: string }).secret

        yield* promise(() => page.goto(`${origin}/secrets`))
        yield* heading(page, "Signing secrets")
        const row = page.locator('tr[data-subscriber="e2e-secrets"]')
        yield* promise(() => row.locator("code.fingerprint", { hasText: fingerprint(sub.secret) }).waitFor())
        yield* promise(() => row.locator("code.fingerprint", { hasText: fingerprint(next) }).waitFor())
        assert.notInclude(yield* promise(() => page.content()), next)
        yield* checked(page, "secrets")

        yield* promise(() => row.getByRole("button", { name: "End overlap now" }).click())
        const dialog = page.getByRole("dialog")
        yield* promise(() => dialog.getByText(fingerprint(sub.secret)).waitFor())
        yield* promise(() => assertAccessible(page, "end overlap dialog"))
        yield* screenshot(page, "secrets-end-overlap-1280")
        yield* promise(() => dialog.getByRole("button", { name: "End overlap" }).click())
        yield* promise(() =>
          row
            .locator("code.fingerprint", { hasText: fingerprint(sub.secret) })
            .waitFor({ state: "detached" }),
        )
        yield* promise(() => row.locator("code.fingerprint", { hasText: fingerprint(next) }).waitFor())
        assert.strictEqual(
          yield* promise(() => row.getByRole("button", { name: "End overlap now" }).count()),
          0,
        )
        const [audit] = yield* query(
          (sql) => sql`select count(*)::int as n from audit_log where action = 'webhook_secrets.end_overlap'`,
        )
        assert.strictEqual(audit!.n, 1)
        assert.deepStrictEqual(problems(), [])
      }),
    )
  })
})

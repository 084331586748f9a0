import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { assertAccessible } from "../../support/Accessibility.ts"
import { openConsole, operatorAccount, promise, screenshot, signIn } from "../../support/Console.ts"
import { enrollmentService } from "../../support/Enrollment.ts"
import { awaitDeliveries, lifecycleOwner } from "../../support/Lifecycle.ts"
import { awaitProspect, completeProspect, postProspect } from "../../support/Prospects.ts"
import { startReceiver } from "../../support/Receiver.ts"
import { query } from "../../support/Webhooks.ts"

// The partner side takes the prospect and delivers its events (workers); the console role serves the pages.
const service = enrollmentService({
  ROLES: "partner-api,enrollment,workers,console",
  CONSOLE_PORT: "0",
  SERVICE_ENV: "development",
})
const TIMEOUT = 300_000

/** Types `text` in the header's search box and submits it from the keyboard. */
const searchFor = (page: Page, text: string) =>
  promise(async () => {
    const box = page.getByRole("searchbox", { name: "Search" })
    await box.fill(text)
    await box.press("Enter")
  })

/** The page checked by axe-core at 360 and 1280 px, saved at each (`<name>-360`, `<name>-1280`). */
const checkNarrowAndWide = (page: Page, name: string) =>
  Effect.gen(function* () {
    for (const width of [360, 1280]) {
      yield* promise(() => page.setViewportSize({ width, height: 1024 }))
      yield* promise(() => assertAccessible(page, `${name} at ${width} px`))
      yield* screenshot(page, `${name}-${width}`)
    }
  })

/** The page checked by axe-core and saved at both widths (`<name>` and `<name>-768`). */
const checkAndSave = (page: Page, name: string) =>
  Effect.gen(function* () {
    for (const width of [1280, 768]) {
      yield* promise(() => page.setViewportSize({ width, height: 1024 }))
      yield* promise(() => assertAccessible(page, `${name} at ${width} px`))
      yield* screenshot(page, width === 1280 ? name : `${name}-768`)
    }
    yield* promise(() => page.setViewportSize({ width: 1280, height: 1024 }))
  })

describe("console: owners, prospects and search", () => {
  layer(service.layer, { timeout: "300 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "searching a tpp_ id opens the prospect's page, with its events and their deliveries; the owner's page shows its bank accounts by their last four digits",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "console-owner-org", "console-owner", "/o")
          yield* postProspect(
            owner.partner,
            owner.slug,
            completeProspect(owner.source, "console-renter", { email: "console-renter@example.com" }),
          )
          const ready = yield* awaitProspect(owner.partner, owner.slug, owner.source, "console-renter")
          const tpp = `tpp_${String(ready.id)}`
          const received = yield* awaitDeliveries(receiver, "/o", (r) =>
            r.some((d) => d.event === "prospect.ready" && d.payload.id === tpp),
          )
          const readyDelivery = received.find((d) => d.event === "prospect.ready")!.deliveryId
          const viewer = yield* operatorAccount(service.env, "viewer")
          const { page, origin } = yield* openConsole
          yield* signIn(page, origin, viewer)

          // The tpp_ id in the header's box opens the prospect's page.
          yield* searchFor(page, tpp)
          yield* promise(() => page.getByRole("heading", { level: 1, name: `Prospect ${tpp}` }).waitFor())
          const events = page.getByTestId("prospect-event")
          yield* promise(() => events.filter({ hasText: "prospect.ready" }).waitFor())
          assert.deepStrictEqual(
            (yield* promise(() => events.allInnerTexts())).map((text) => text.split("\n")[0]!.trim()),
            ["prospect.created", "prospect.ready"],
          )
          const link = events
            .filter({ hasText: "prospect.ready" })
            .getByRole("link", { name: `Delivery ${readyDelivery}` })
          yield* promise(() => link.waitFor())
          yield* promise(() => page.getByRole("heading", { name: "Eligibility decisions" }).waitFor())
          yield* checkAndSave(page, "prospect")

          // Its delivery link opens the delivery's page.
          yield* promise(() => link.click())
          yield* promise(() => page.waitForURL(`${origin}/deliveries/${readyDelivery}`))
          yield* promise(() =>
            page
              .getByRole("heading", { level: 1 })
              .filter({ hasText: `Delivery #${readyDelivery}` })
              .waitFor(),
          )
          // Its event's way from the partner's POST to the webhook: every step on record, each after the one before.
          const timeline = page.getByRole("list", { name: "Timeline" })
          yield* promise(() => timeline.locator('[data-step="delivered"] time').waitFor())
          for (const step of ["accepted", "committed", "published", "routed", "attempted", "delivered"]) {
            const text = yield* promise(() => timeline.locator(`[data-step="${step}"]`).innerText())
            assert.notInclude(text, "not recorded", step)
            if (step !== "accepted") assert.match(text, /\+\d/, step)
          }
          yield* checkAndSave(page, "delivery-timeline")

          // The owner's page, from the nav and the owners list.
          yield* promise(() => page.getByRole("link", { name: "Owners", exact: true }).click())
          yield* promise(() => page.getByRole("heading", { level: 1, name: "Owners" }).waitFor())
          yield* checkAndSave(page, "owners")
          yield* promise(() => page.getByRole("link", { name: "Owner console-owner-org" }).click())
          yield* promise(() =>
            page.getByRole("heading", { level: 1, name: "Owner console-owner-org" }).waitFor(),
          )
          const account = page.getByTestId("bank-account")
          yield* promise(() => account.waitFor())
          const accountText = yield* promise(() => account.innerText())
          assert.include(accountText, "ending 6789")
          assert.notInclude(yield* promise(() => page.content()), "123456789")
          yield* promise(() => page.getByTestId("building").filter({ hasText: "prop-1" }).waitFor())
          yield* promise(() =>
            page
              .getByTestId("owner-endpoint")
              .filter({ hasText: receiver.url("/o") })
              .waitFor(),
          )
          yield* checkAndSave(page, "owner")

          // Several matches: a short list to choose from.
          yield* postProspect(
            owner.partner,
            owner.slug,
            completeProspect(owner.source, "console-second", { email: "console-renter@example.com" }),
          )
          yield* searchFor(page, "console-renter@example.com")
          yield* promise(() =>
            page.getByRole("heading", { level: 1, name: "Search: console-renter@example.com" }).waitFor(),
          )
          const results = page.getByTestId("search-result")
          yield* promise(() => results.nth(1).waitFor())
          assert.strictEqual(yield* promise(() => results.count()), 2)
          yield* promise(() => results.getByRole("link", { name: tpp }).click())
          yield* promise(() => page.getByRole("heading", { level: 1, name: `Prospect ${tpp}` }).waitFor())
          yield* searchFor(page, "%' nothing \" matches")
          yield* promise(() => page.getByText("Nothing matches").waitFor())
          yield* checkAndSave(page, "search")
        }).pipe(Effect.scoped),
      TIMEOUT,
    )

    it.effect(
      "/ focuses the search, which finds a renter by name, a delivery as #id and an event's deliveries; the prospect's page shows a declined payment with its reason and its fields in the spec's order; a skip link leads past the header",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "console-find-org", "console-find", "/f")
          yield* postProspect(
            owner.partner,
            owner.slug,
            completeProspect(owner.source, "console-find-renter", {
              email: "marisol@example.com",
              first_name: "Marisol",
              last_name: "Quintero",
            }),
          )
          const ready = yield* awaitProspect(owner.partner, owner.slug, owner.source, "console-find-renter")
          const tpp = `tpp_${String(ready.id)}`
          const received = yield* awaitDeliveries(receiver, "/f", (r) =>
            r.some((d) => d.event === "prospect.ready" && d.payload.id === tpp),
          )
          const readyDelivery = received.find((d) => d.event === "prospect.ready")!.deliveryId
          const [event] = yield* query(
            (sql) => sql<Array<{ event_id: string }>>`
              select event_id from webhook_deliveries where id = ${readyDelivery}::bigint`,
          )
          // An application whose card was declined, as the processor answered.
          yield* query(
            (sql) => sql`
              with application as (
                insert into policy_applications (prospect_id, owner_id, outcome, product_type, cadence,
                                                 coverage_amount_cents, premium_cents, payments,
                                                 coverage_start_date, coverage_end_date)
                select p.id, p.owner_id, 'quoted', 'security_deposit_insurance', 'upfront', 250000, 12500, 1,
                       '2026-01-01', '2026-12-31'
                from prospects p where p.id = ${String(ready.id)}::bigint
                returning id
              ), card as (
                insert into payment_methods (provider, reference, last4, brand)
                values ('test', 'console-find-declined', '0341', 'visa') returning id
              )
              insert into charges (application_id, payment_method_id, kind, amount_cents, status, failure_reason,
                                   idempotency_key)
              select application.id, card.id, 'initial', 12500, 'declined', 'Your card was declined.',
                     'console-find-declined'
              from application, card`,
          )
          const viewer = yield* operatorAccount(service.env, "viewer", "finder")
          const { page, origin, problems } = yield* openConsole
          yield* signIn(page, origin, viewer)
          yield* promise(() => page.setViewportSize({ width: 1280, height: 1024 }))

          // The skip link is the first stop and leads past the header to the page.
          const focused = page.locator(":focus")
          yield* promise(() => page.reload())
          yield* promise(() => page.getByRole("heading", { level: 1, name: "Deliveries" }).waitFor())
          yield* promise(() => page.keyboard.press("Tab"))
          assert.strictEqual(yield* promise(() => focused.innerText()), "Skip to content")
          yield* promise(() => page.keyboard.press("Enter"))
          assert.strictEqual(yield* promise(() => focused.getAttribute("id")), "main")

          // "/" focuses the search box; typed in a field, it is only a character.
          yield* promise(() => page.keyboard.press("/"))
          const box = page.getByRole("searchbox", { name: "Search" })
          assert.strictEqual(yield* promise(() => focused.getAttribute("id")), "header-search")
          assert.strictEqual(yield* promise(() => box.inputValue()), "")
          yield* promise(() => page.keyboard.type("quin"))
          yield* promise(() => page.keyboard.press("Enter"))
          yield* promise(() => page.getByRole("heading", { level: 1, name: `Prospect ${tpp}` }).waitFor())

          const payment = page.getByTestId("payment-attempt")
          yield* promise(() => payment.waitFor())
          const paymentText = yield* promise(() => payment.innerText())
          assert.include(paymentText, "declined")
          assert.include(paymentText, "Your card was declined.")
          assert.include(paymentText, "ending 0341")
          const names = yield* promise(() =>
            page.locator('section[aria-labelledby="fields-title"] dt').allInnerTexts(),
          )
          // The partner's id and source are in the facts above; the rest as the spec lists them.
          assert.deepStrictEqual(names.slice(0, 8), [
            "email",
            "phone",
            "first_name",
            "last_name",
            "birthdate",
            "lease_start_date",
            "lease_end_date",
            "monthly_rent_cents",
          ])
          yield* checkNarrowAndWide(page, "prospect-payments")
          yield* promise(() => page.setViewportSize({ width: 1280, height: 1024 }))

          // A delivery as the lists write it.
          yield* promise(() => page.keyboard.press("/"))
          yield* promise(() => box.fill(`#${readyDelivery}`))
          yield* promise(() => box.press("Enter"))
          yield* promise(() => page.waitForURL(`${origin}/deliveries/${readyDelivery}`))

          // An event's id: its delivery.
          yield* promise(() => box.fill(event!.event_id))
          yield* promise(() => box.press("Enter"))
          yield* promise(() => page.waitForURL(`${origin}/deliveries/${readyDelivery}`))
          assert.deepStrictEqual(problems(), [])
        }).pipe(Effect.scoped),
      TIMEOUT,
    )
  })
})

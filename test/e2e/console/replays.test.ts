import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import {
  consoleService,
  openConsole,
  operatorAccount,
  promise,
  screenshot,
  signIn,
} from "../../support/Console.ts"
import { startReceiver } from "../../support/Receiver.ts"
import { eventually } from "../../support/Streams.ts"
import {
  deliveriesOf,
  endpoint,
  examplePayload,
  owner,
  publishEvent,
  subscriber,
} from "../../support/WebhookEngine.ts"

const service = consoleService()
const EVENT = "prospect.ready"

/** Two minutes ago, whole minutes, as the replay form's since field takes it in the zone its label names. */
const fillSince = (page: Page) =>
  promise(async () => {
    const field = page.getByLabel(/^Since/)
    const label = (await page.locator("label[for='replay-since']").textContent()) ?? ""
    const value = await page.evaluate((utc) => {
      const at = new Date(Date.now() - 120_000)
      const pad = (n: number) => String(n).padStart(2, "0")
      return utc
        ? at.toISOString().slice(0, 16)
        : `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`
    }, label.includes("UTC"))
    await field.fill(value)
  })

describe("console: replaying what an endpoint missed", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "an operator counts, replays and follows an endpoint's missed events, and cancels a waiting replay",
      () =>
        Effect.gen(function* () {
          const { page, origin, problems } = yield* openConsole
          const operator = yield* operatorAccount(service.env, "operator")
          const receiver = yield* startReceiver
          const acme = yield* owner("replay-console")
          const sub = yield* subscriber({ ownerId: acme.id })
          // Routed to the control endpoint first: the endpoint made next can only get them by a replay.
          const control = yield* endpoint(sub.id, receiver.url("/control"), [EVENT])
          yield* Effect.forEach(Array.from({ length: 3 }), () =>
            publishEvent(EVENT, acme.slug, examplePayload(EVENT)),
          )
          yield* eventually(deliveriesOf(control), (rows) => rows.length === 3)
          const late = yield* endpoint(sub.id, receiver.url("/late"), [EVENT])

          yield* signIn(page, origin, operator)
          yield* promise(() => page.goto(`${origin}/endpoints/${late}`))
          yield* promise(() => page.getByRole("heading", { name: "Replays" }).waitFor())
          yield* fillSince(page)
          yield* promise(() => page.getByRole("button", { name: "Count the events" }).click())
          yield* promise(() =>
            page.getByTestId("replay-preview").getByText("3 events would be sent again.").waitFor(),
          )
          assert.lengthOf(yield* deliveriesOf(late), 0, "counting sends nothing")
          yield* screenshot(page, "endpoint-replay-preview")
          yield* promise(() => page.getByRole("button", { name: "Replay 3 events" }).click())
          yield* promise(() => page.getByText("3 of 3").waitFor())
          yield* promise(() => page.locator("[data-testid^='replay-'] .badge-completed").waitFor())
          yield* eventually(
            deliveriesOf(late),
            (rows) => rows.length === 3 && rows.every((r) => r.status === "delivered"),
          )
          assert.lengthOf(receiver.received("/late"), 3)
          yield* screenshot(page, "endpoint-replay-completed")

          // A suspended endpoint's replay waits: it is canceled from the page.
          const waiting = yield* endpoint(sub.id, receiver.url("/waiting"), [EVENT], "suspended")
          yield* promise(() => page.goto(`${origin}/endpoints/${waiting}`))
          yield* promise(() => page.getByRole("heading", { name: "Replays" }).waitFor())
          yield* fillSince(page)
          yield* promise(() => page.getByRole("button", { name: "Count the events" }).click())
          yield* promise(() =>
            page.getByTestId("replay-preview").getByText("3 events would be sent again.").waitFor(),
          )
          yield* promise(() => page.getByRole("button", { name: "Replay 3 events" }).click())
          yield* promise(() => page.getByText("0 of 3").waitFor())
          yield* promise(() => page.getByRole("button", { name: /^Cancel replay #/ }).click())
          yield* promise(() => page.locator("[data-testid^='replay-'] .badge-canceled").waitFor())
          yield* screenshot(page, "endpoint-replay-canceled")
          assert.lengthOf(receiver.received("/waiting"), 0)
          assert.deepStrictEqual(problems(), [])
        }),
    )
  })
})

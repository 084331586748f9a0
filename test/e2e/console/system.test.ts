import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { Nats } from "../../../backend/platform/Nats.ts"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  consoleService,
  openConsole,
  operatorAccount,
  promise,
  screenshot,
  signIn,
} from "../../support/Console.ts"
import { eventually } from "../../support/Streams.ts"
import { examplePayload, publishEvent, query, workerProcess } from "../../support/WebhookEngine.ts"

// The console alone in the test process; the workers run in processes of their own, stopped and started by the test.
const service = consoleService({ ROLES: "console" })
const TIMEOUT = 240_000
const CONSUMER = "webhook_router_p0"

const consumerRow = (page: Page, stream: string) =>
  page.locator(`[data-stream="${stream}"] tr[data-consumer="${CONSUMER}"]`)

/** Waits until the page shows the router's consumer with `pending` messages pending. */
const showsPending = (page: Page, stream: string, pending: number) =>
  promise(() =>
    consumerRow(page, stream)
      .getByTestId("pending")
      .filter({ hasText: new RegExp(`^${pending}$`) })
      .waitFor({
        timeout: 60_000,
      }),
  )

const deadLetterIds = query(
  (sql) => sql<Array<{ id: string }>>`select id from dead_letters order by id`,
).pipe(Effect.map((rows) => rows.map((row) => row.id)))

describe("console: system", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "shows a consumer's pending count rise while the workers are stopped and fall when they start; an operator retries a dead letter, audited",
      () =>
        Effect.gen(function* () {
          const nats = yield* Nats
          const events = nats.streamName("EVENTS")
          const { page, origin, problems } = yield* openConsole
          const operator = yield* operatorAccount(service.env, "operator")

          // The workers make their consumers, then stop.
          const first = yield* workerProcess(service.env)
          yield* signIn(page, origin, operator)
          yield* promise(() => page.getByRole("link", { name: "System" }).click())
          yield* promise(() => page.getByRole("heading", { level: 1, name: "System" }).waitFor())
          yield* showsPending(page, events, 0)
          yield* first.signal("SIGTERM")
          yield* first.exited

          for (let i = 0; i < 4; i++)
            yield* publishEvent("policy.created", "acme", examplePayload("policy.created"))
          // A body the router cannot decode: once the workers are back, it becomes a dead letter.
          yield* nats.publish(nats.subject("events.acme.prospect.ready"), Buffer.from("not json"))
          yield* showsPending(page, events, 5)
          yield* screenshot(page, "system-behind")

          yield* workerProcess(service.env)
          yield* showsPending(page, events, 0)
          // The workers' loops, each with a recent pass: the relay, the retry scheduler, every actor.
          for (const loop of ["outbox_relay", "retry_scheduler", "actor:webhook_router"]) {
            const shown = page.locator(`[data-testid="loops"] tr[data-loop="${loop}"]`)
            yield* promise(() => shown.first().waitFor({ timeout: 60_000 }))
            assert.match(yield* promise(() => shown.first().innerText()), /\d+ s ago/)
          }
          const [deadId] = yield* eventually(deadLetterIds, (ids) => ids.length === 1)
          const row = page.locator(`tr[data-dead-letter-id="${deadId}"]`)
          yield* promise(() => row.waitFor())
          const text = yield* promise(() => row.innerText())
          assert.include(text, "webhook_router")
          assert.include(text, "events.acme.prospect.ready")
          assert.include(text, "undecodable")
          yield* screenshot(page, "system")

          for (const width of [1280, 768]) {
            yield* promise(() => page.setViewportSize({ width, height: 1024 }))
            yield* promise(() => assertAccessible(page, `/system at ${width} px`))
          }
          yield* promise(() => page.setViewportSize({ width: 1280, height: 1024 }))

          yield* promise(() => row.getByRole("button", { name: `Retry dead letter #${deadId}` }).click())
          yield* promise(() =>
            page.getByRole("status").getByText(`Dead letter #${deadId} was published again`).waitFor(),
          )
          yield* promise(() => row.getByTestId("retries").getByText("1×").waitFor())
          // Read again by the router, still undecodable: a second dead letter, shown on top.
          const ids = yield* eventually(deadLetterIds, (ids) => ids.length === 2)
          yield* promise(() => page.locator(`tr[data-dead-letter-id="${ids[1]}"]`).waitFor())

          yield* promise(() => page.goto(`${origin}/audit?action=dead_letters.retry`))
          const entry = page.getByTestId("audit-entry")
          yield* promise(() => entry.first().waitFor())
          assert.strictEqual(yield* promise(() => entry.count()), 1)
          const audited = yield* promise(() => entry.first().innerText())
          assert.include(audited, operator.email)
          assert.include(audited, `dead_letter:${deadId}`)
          assert.deepStrictEqual(problems(), [])
        }),
      TIMEOUT,
    )
  })
})

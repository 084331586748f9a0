import path from "node:path"
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
import {
  endpoint,
  examplePayload,
  owner,
  publishEvent,
  query,
  subscriber,
  workerProcess,
} from "../../support/WebhookEngine.ts"

// The console alone in the test process; the workers run in processes of their own, stopped and started by the test.
const service = consoleService({ ROLES: "console" })
const TIMEOUT = 240_000
const CONSUMER = "webhook_router_p0"

const consumerRow = (page: Page, stream: string) =>
  page.locator(`[data-stream="${stream}"] tr[data-consumer="${CONSUMER}"]`)

/**
 * Waits until the page shows the router's consumer with `pending` messages pending: marked busy and in view, or,
 * with none, folded away among the idle consumers.
 */
const showsPending = (page: Page, stream: string, pending: number) =>
  promise(async () => {
    const row = consumerRow(page, stream)
    await row
      .getByTestId("pending")
      .filter({ hasText: new RegExp(`^${pending}$`) })
      .waitFor({ state: pending === 0 ? "attached" : "visible", timeout: 60_000 })
    if (pending === 0) {
      assert.isFalse(await row.isVisible())
      assert.strictEqual(await row.getAttribute("data-busy"), "false")
    } else {
      await row.getByTestId("busy").waitFor()
    }
  })

const deadLetterIds = query(
  (sql) => sql<Array<{ id: string }>>`select id from dead_letters order by id`,
).pipe(Effect.map((rows) => rows.map((row) => row.id)))

describe("console: system", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "opens with the webhook backlog: deliveries waiting by status, the oldest, the endpoints with the most; idle consumers folded away",
      () =>
        Effect.gen(function* () {
          const { page, origin, problems } = yield* openConsole
          const operator = yield* operatorAccount(service.env, "viewer")
          // The workers make their consumers and stop: what is inserted after stays as it is.
          const workers = yield* workerProcess(service.env)
          yield* workers.signal("SIGTERM")
          yield* workers.exited
          const acme = yield* owner("summary-acme")
          const sub = yield* subscriber({ ownerId: acme.id })
          const ids: Array<number> = []
          for (let i = 0; i < 6; i++) ids.push(yield* endpoint(sub.id, `https://example.test/${i}`, []))
          yield* query(
            (sql) =>
              sql`update webhook_endpoints set name = 'Endpoint ' || id where id = any(${ids}::bigint[])`,
          )
          // Endpoint i has i + 1 deliveries waiting: the first's held, the second's retrying, the third's rate
          // limited, the rest pending; the oldest on the fourth.
          yield* query(
            (sql) => sql`
              insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status,
                                              created_at, held_since, next_retry_at)
              select (${ids}::bigint[])[1 + e], 'summary-' || e || '-' || n, 'policy.created', 'summary-acme',
                     convert_to('{}', 'UTF8'),
                     case when e = 1 then 'retrying' when e = 2 then 'rate_limited' else 'pending' end,
                     now() - (case when e = 3 and n = 0 then 7200 else 60 end) * interval '1 second',
                     case when e = 0 then now() end,
                     case when e in (1, 2) then now() + interval '1 day' end
              from generate_series(0, 5) e cross join lateral generate_series(0, e) n`,
          )
          const [oldest] = yield* query(
            (sql) => sql<Array<{ id: string }>>`
              select id from webhook_deliveries where event_id = 'summary-3-0'`,
          )

          yield* signIn(page, origin, operator)
          yield* promise(() => page.goto(`${origin}/system`))
          const backlog = page.getByTestId("backlog")
          yield* promise(() => backlog.getByRole("heading", { name: "Webhook backlog" }).waitFor())
          // The summary is the first card on the page.
          assert.strictEqual(
            yield* promise(() => page.locator("section.card").first().getAttribute("data-testid")),
            "backlog",
          )
          const figure = (status: string) =>
            promise(() => backlog.locator(`[data-status="${status}"] dd`).innerText())
          assert.strictEqual(yield* figure("held"), "1")
          assert.strictEqual(yield* figure("retrying"), "2")
          assert.strictEqual(yield* figure("rate_limited"), "3")
          assert.strictEqual(yield* figure("pending"), String(4 + 5 + 6))
          const oldestText = yield* promise(() => backlog.getByTestId("oldest-waiting").innerText())
          assert.include(oldestText, `#${oldest!.id}`)
          assert.include(oldestText, "2 h")
          yield* promise(() =>
            backlog.getByRole("heading", { name: "The 5 endpoints with the most waiting, of 6" }).waitFor(),
          )
          const rows = backlog.locator("tbody tr")
          assert.deepStrictEqual(
            yield* promise(() =>
              rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-endpoint-id"))),
            ),
            [6, 5, 4, 3, 2].map((n) => String(ids[n - 1])),
          )
          assert.strictEqual(yield* promise(() => rows.first().getByTestId("waiting").innerText()), "6")

          // Every consumer is idle: folded away, a disclosure per stream says how many.
          const idle = page.getByTestId("idle-consumers").first()
          yield* promise(() => idle.waitFor())
          assert.isFalse(yield* promise(() => idle.locator("tbody tr").first().isVisible()))
          assert.strictEqual(yield* promise(() => page.getByTestId("busy").count()), 0)
          yield* screenshot(page, "system-summary")
          yield* promise(() =>
            backlog.screenshot({ path: path.join(".data", "screenshots", "console", "system-backlog.png") }),
          )
          for (const width of [360, 1280]) {
            yield* promise(() => page.setViewportSize({ width, height: 1024 }))
            yield* promise(() => assertAccessible(page, `/system, its summary, at ${width} px`))
          }
          yield* promise(() => idle.locator("summary").click())
          yield* promise(() => idle.locator("tbody tr").first().waitFor())
          yield* promise(() => assertAccessible(page, "/system with idle consumers shown"))

          // The held figure leads to the held deliveries.
          yield* promise(() => backlog.locator('[data-status="held"] a').click())
          yield* promise(() => page.waitForURL(/\/deliveries\?status=held/))
          assert.deepStrictEqual(problems(), [])
          yield* query((sql) => sql`delete from webhook_deliveries where endpoint_id = any(${ids}::bigint[])`)
        }),
      TIMEOUT,
    )

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

          for (const width of [360, 1280]) {
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

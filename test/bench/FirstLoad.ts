import { Context, Effect, Layer } from "effect"
import { ensureConsoleBuilt } from "../../console/build.mjs"
import { appLayer } from "../../backend/App.ts"
import { Operators } from "../../backend/operator/Operators.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Db } from "../../backend/platform/Db.ts"
import { ListeningPorts } from "../../backend/platform/Http.ts"
import { launchBrowser } from "../support/Browser.ts"
import { percentile } from "./Probes.ts"
import type { LatencyRow } from "./Roster.ts"

const RUNS = Number(process.env.BENCH_FIRST_LOAD_RUNS ?? 20)
const WARMUP = 3
const DELIVERIES = 200
const PASSWORD = "correct horse battery staple"

/** In the page: the time since navigation began once the deliveries list shows a row (this project has no DOM types). */
interface TimedPage {
  readonly document: { readonly querySelector: (selector: string) => unknown }
  readonly performance: { readonly now: () => number }
}

/**
 * The console's first load: opening `/deliveries` in chromium (a new tab of a signed-in browser, its cache warm
 * as an operator's is) until its first row is on screen, beside the API's own answer to the same
 * `GET /api/deliveries` from the same machine. `RUNS` of each after `WARMUP`.
 */
export const firstLoad = Effect.gen(function* () {
  const config = yield* AppConfig
  yield* Effect.promise(() => ensureConsoleBuilt())
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(appLayer(config))
      const origin = `http://127.0.0.1:${Context.get(context, ListeningPorts).get("console")!}`
      const operator = { email: "bench-first-load@example.com", password: PASSWORD }
      yield* Context.get(context, Operators).create({ ...operator, role: "viewer" }, "bench")
      const db = Context.get(context, Db)
      yield* db.query(
        (sql) => sql`
          with o as (insert into owners (slug, name) values ('bench-first-load', 'Bench First Load') returning id),
               s as (insert into webhook_subscribers (owner_id) select id from o returning id)
          insert into webhook_endpoints (subscriber_id, name, destination_url, events)
          select id, 'bench endpoint', 'https://bench.example/hooks', array['policy.created'] from s`,
      )
      yield* db.query(
        (sql) => sql`
          insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, attempt_number,
                                          last_attempted_at, delivered_at)
          select (select id from webhook_endpoints limit 1), 'bench-' || i, 'policy.created', 'bench-first-load',
                 convert_to('{"event":"policy.created"}', 'UTF8'), 'delivered', 1, now(), now()
          from generate_series(1, ${DELIVERIES}) i`,
      )

      const browser = yield* launchBrowser({ viewport: { width: 1280, height: 800 } })
      const signIn = yield* Effect.promise(() =>
        browser.request.post(`${origin}/api/session`, { data: operator }),
      )
      if (signIn.status() !== 200) return yield* Effect.die(new Error(`sign-in answered ${signIn.status()}`))
      const cookies = (yield* Effect.promise(() => browser.cookies(origin)))
        .map((cookie) => `${cookie.name}=${cookie.value}`)
        .join("; ")

      const openOnce = Effect.promise(async () => {
        const page = await browser.newPage()
        try {
          await page.goto(`${origin}/deliveries`, { waitUntil: "commit" })
          return await page
            .waitForFunction(() => {
              const inPage = globalThis as unknown as TimedPage
              return (
                inPage.document.querySelector("tr[data-delivery-id]") !== null && inPage.performance.now()
              )
            })
            .then((handle) => handle.jsonValue() as Promise<number>)
        } finally {
          await page.close()
        }
      })
      const askOnce = Effect.promise(async () => {
        const start = performance.now()
        const response = await fetch(`${origin}/api/deliveries`, { headers: { cookie: cookies } })
        await response.text()
        if (response.status !== 200) throw new Error(`GET /api/deliveries answered ${response.status}`)
        return performance.now() - start
      })
      for (let i = 0; i < WARMUP; i++) {
        yield* openOnce
        yield* askOnce
      }
      const loads: Array<number> = []
      const answers: Array<number> = []
      for (let i = 0; i < RUNS; i++) {
        loads.push(yield* openOnce)
        answers.push(yield* askOnce)
      }
      const row: LatencyRow = {
        name: `console first load: opening /deliveries to its first row on screen (chromium, ${RUNS} new tabs, ${DELIVERIES} deliveries)`,
        p50: percentile(loads, 50),
        p99: percentile(loads, 99),
        baselineP50: percentile(answers, 50),
        baselineP99: percentile(answers, 99),
        baselineName: "the API's own answer to the same GET /api/deliveries, in the same run",
      }
      return { rows: [row] }
    }),
  )
})

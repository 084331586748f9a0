import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { assertAccessible } from "../../support/Accessibility.ts"
import { openConsole, operatorAccount, promise, screenshot, signIn } from "../../support/Console.ts"
import { awaitLogged, envelope, ingestSetUp, prospectUpdate, send } from "../../support/Ingest.ts"
import { prospectService } from "../../support/Prospects.ts"

// A partner's ingestion client sends events to the ingestion gateway; the console shows what became of them.
const service = prospectService({ ROLES: "partner-api,ingest-api,workers,console", CONSOLE_PORT: "0" })
const SOURCE = "e2elog"

describe("console: ingest log", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect("the ingest page lists an event sent to the ingestion gateway with its outcome", () =>
      Effect.gen(function* () {
        const setUp = yield* ingestSetUp("org-e2e-log", SOURCE)
        const applied = yield* send(setUp, envelope(SOURCE, prospectUpdate("e2e-1", "2026-01-10T12:00:00Z")))
        yield* awaitLogged(SOURCE, [applied])
        const ignored = yield* send(setUp, envelope(SOURCE, { id: "e2e-2" }, "Unmapped"))
        yield* awaitLogged(SOURCE, [ignored])

        const { page, origin, problems } = yield* openConsole
        const viewer = yield* operatorAccount(service.env, "viewer")
        yield* signIn(page, origin, viewer)
        yield* promise(() => page.getByRole("link", { name: "Ingest" }).click())
        yield* promise(() => page.getByRole("heading", { level: 1, name: "Ingest log" }).waitFor())
        const rows = page.getByTestId("ingest-entry")
        yield* promise(() => rows.nth(1).waitFor())
        const newest = yield* promise(() => rows.nth(0).innerText())
        assert.include(newest, "ignored")
        assert.include(newest, "no mapping for event type Unmapped")
        const oldest = yield* promise(() => rows.nth(1).innerText())
        assert.include(oldest, "applied")
        assert.include(oldest, SOURCE)
        assert.include(oldest, setUp.client.clientId)
        assert.include(oldest, "ProspectUpdate")
        assert.include(oldest, "e2e-1")
        assert.match(oldest, /tpp_\d+/)

        // The outcome filter, kept in the URL: a reload shows the same rows.
        yield* promise(() => page.getByLabel("Outcome").selectOption("applied"))
        yield* promise(() => page.getByRole("button", { name: "Apply filters" }).click())
        yield* promise(() => page.waitForURL(/outcome=applied/))
        yield* promise(() => page.reload())
        yield* promise(() => rows.first().waitFor())
        assert.strictEqual(yield* promise(() => rows.count()), 1)
        assert.strictEqual(yield* promise(() => page.getByLabel("Outcome").inputValue()), "applied")
        yield* promise(() => rows.first().getByText("8 fields").click())
        yield* promise(() => rows.first().getByText('"first_name": "Jane"').waitFor())

        yield* promise(() => page.goto(`${origin}/ingest`))
        yield* promise(() => rows.nth(1).waitFor())
        for (const width of [1280, 768]) {
          yield* promise(() => page.setViewportSize({ width, height: 1024 }))
          yield* promise(() => assertAccessible(page, `/ingest at ${width} px`))
          yield* screenshot(page, `ingest-${width}`)
        }

        // The prospect an event was applied to opens its page.
        const tpp = /tpp_\d+/.exec(oldest)![0]
        yield* promise(() => rows.nth(1).getByRole("link", { name: tpp }).click())
        yield* promise(() => page.getByRole("heading", { level: 1, name: `Prospect ${tpp}` }).waitFor())
        assert.deepStrictEqual(problems(), [])
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { assertAccessible } from "../../support/Accessibility.ts"
import { consoleService, openConsole, operatorAccount, promise, signIn } from "../../support/Console.ts"
import {
  awaitDeliveries,
  examplePayload,
  publishEvent,
  receiverEndpoint,
} from "../../support/WebhookEngine.ts"

const service = consoleService()
const EVENT = "policy.created"

describe("console: the first load", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "asks for the session and the deliveries at once, fetches the deliveries once, and loads two scripts",
      () =>
        Effect.gen(function* () {
          const { receiver, endpointId } = yield* receiverEndpoint("first-load", "/hook", [EVENT])
          receiver.respond("/hook", () => ({ status: 200, body: "ok" }))
          for (let i = 0; i < 3; i++) yield* publishEvent(EVENT, "first-load", examplePayload(EVENT))
          const [newest] = (yield* awaitDeliveries(endpointId, (rows) => rows.length === 3)).slice(-1)

          const { page, origin, problems } = yield* openConsole
          yield* signIn(page, origin, yield* operatorAccount(service.env, "viewer", "first-load"))
          for (const width of [1280, 360] as const) {
            yield* promise(() => page.setViewportSize({ width, height: 800 }))
            // Away from the console first, so nothing of the page before is in the log.
            yield* promise(() => page.goto("about:blank"))
            // What the page asks for, in order: each request's start and end.
            const log: Array<string> = []
            const name = (url: string) => new URL(url).pathname
            const started = (request: { url: () => string }) => log.push(`start ${name(request.url())}`)
            const ended = (request: { url: () => string }) => log.push(`end ${name(request.url())}`)
            page.on("request", started)
            page.on("requestfinished", ended)
            page.on("requestfailed", ended)
            yield* promise(() => page.goto(`${origin}/deliveries`))
            yield* promise(() => page.locator(`tr[data-delivery-id="${newest!.id}"]`).waitFor())
            yield* promise(() => page.getByTestId("live-status").getByText("Live · up to date").waitFor())
            page.off("request", started)
            page.off("requestfinished", ended)
            page.off("requestfailed", ended)

            const starts = log.filter((entry) => entry.startsWith("start "))
            assert.deepStrictEqual(
              starts.filter((entry) => entry === "start /api/deliveries"),
              ["start /api/deliveries"],
              `the deliveries are fetched once: ${log.join(", ")}`,
            )
            // Both asked for before either answered.
            const firstEnd = log.findIndex(
              (entry) => entry === "end /api/session" || entry === "end /api/deliveries",
            )
            assert.isAbove(firstEnd, log.indexOf("start /api/session"), log.join(", "))
            assert.isAbove(firstEnd, log.indexOf("start /api/deliveries"), log.join(", "))
            assert.isAtLeast(log.indexOf("start /api/session"), 0, log.join(", "))
            // The shell is one script beside its entry.
            const scripts = starts.filter((entry) => entry.endsWith(".js"))
            assert.lengthOf(scripts, 2, `scripts of the first load: ${scripts.join(", ")}`)
            yield* promise(() => assertAccessible(page, `deliveries after a first load at ${width} px`))
          }
          assert.deepStrictEqual(problems(), [])
        }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { AuditChannel, recordAudit } from "../../../backend/audit/Audit.ts"
import { Db } from "../../../backend/platform/Db.ts"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  consoleService,
  openConsole,
  operatorAccount,
  promise,
  screenshot,
  signIn,
} from "../../support/Console.ts"

const service = consoleService()
const TIMEOUT = 120_000
const WIDTHS = [360, 1280] as const

describe("console: empty lists and the audit log's before and after", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect(
      "an empty list says there is nothing yet, and that nothing matches only when filtered",
      () =>
        Effect.gen(function* () {
          const { page, origin, problems } = yield* openConsole
          yield* signIn(page, origin, yield* operatorAccount(service.env, "viewer"))
          yield* promise(() => page.goto(`${origin}/ingest`))
          yield* promise(() => page.getByText("No inbound event received yet.").waitFor())
          assert.strictEqual(yield* promise(() => page.getByText("matches these filters").count()), 0)
          for (const width of WIDTHS) {
            yield* promise(() => page.setViewportSize({ width, height: 900 }))
            yield* promise(() => assertAccessible(page, `empty /ingest at ${width} px`))
          }
          yield* promise(() => page.goto(`${origin}/ingest?source=nobody`))
          yield* promise(() => page.getByText("No inbound event matches these filters.").waitFor())
          for (const width of WIDTHS) {
            yield* promise(() => page.setViewportSize({ width, height: 900 }))
            yield* promise(() => assertAccessible(page, `filtered /ingest at ${width} px`))
          }
          yield* promise(() => page.goto(`${origin}/audit?action=nothing.like.this`))
          yield* promise(() => page.getByText("No audit entry matches these filters.").waitFor())
          assert.deepStrictEqual(problems(), [])
        }),
      TIMEOUT,
    )

    it.effect(
      "the audit log's before and after boxes wrap between JSON tokens, never inside a short one",
      () =>
        Effect.gen(function* () {
          const db = yield* Db
          const long = "https://hooks.example.com/partners/acme/receivers/production/webhooks/v2/inbound"
          yield* recordAudit(db, {
            actor: "cli:wrap",
            action: "endpoints.update",
            target: "endpoint:1",
            before: {
              destination_url: long,
              events: ["policy.created", "policy.canceled", "prospect.ready", "prospect.incomplete"],
              suspension_reason: "receiver answered 500 for every request since the certificate rotation",
              max_in_flight: 2,
            },
            after: { destination_url: `${long}/v3`, events: ["policy.created"], suspension_reason: null },
          }).pipe(Effect.provideService(AuditChannel, "cli"))

          const { page, origin, problems } = yield* openConsole
          yield* signIn(page, origin, yield* operatorAccount(service.env, "viewer"))
          for (const width of WIDTHS) {
            yield* promise(() => page.setViewportSize({ width, height: 900 }))
            yield* promise(() => page.goto(`${origin}/audit?actor=cli:wrap`))
            const entry = page.getByTestId("audit-entry").first()
            yield* promise(() => entry.getByText("Before and after").click())
            const before = entry.getByRole("region", { name: "Before" })
            yield* promise(() => before.waitFor())
            yield* screenshot(page, `audit-before-after-${width}`)
            // A token that fits on a line of the box sits on one line (its box has one rectangle); only one wider
            // than the box may break.
            const split = yield* promise(() =>
              before.evaluate((box) => {
                const style = box.ownerDocument.defaultView!.getComputedStyle(box)
                const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)
                const probe = box.ownerDocument.createElement("span")
                probe.style.whiteSpace = "pre"
                box.append(probe)
                const wide = (text: string) => {
                  probe.textContent = text
                  return probe.getBoundingClientRect().width > room
                }
                const found = [...box.querySelectorAll(".json-token")]
                  .filter((span) => span.getClientRects().length > 1 && !wide(span.textContent ?? ""))
                  .map((span) => span.textContent)
                probe.remove()
                return found
              }),
            )
            assert.deepStrictEqual(split, [], `at ${width} px`)
            assert.isFalse(
              yield* promise(() => before.evaluate((box) => box.scrollWidth > box.clientWidth)),
              `nothing overflows the box at ${width} px`,
            )
            yield* promise(() => assertAccessible(page, `/audit before and after at ${width} px`))
          }
          assert.deepStrictEqual(problems(), [])
        }),
      TIMEOUT,
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { assertAccessible } from "../../support/Accessibility.ts"
import {
  consoleService,
  openConsole,
  operatorAccount,
  promise,
  screenshot,
  sidewaysOverflow,
  signIn,
  tableLayout,
  type TableWindow,
} from "../../support/Console.ts"
import {
  awaitDeliveries,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
} from "../../support/WebhookEngine.ts"

const service = consoleService()
const EVENT = "policy_application.submitted"
const SLUG = "northwind-residential-west"
const OWNER_NAME = "Northwind Residential Property Management Holdings West"
const ENDPOINT_NAME = "Primary production webhook receiver for leasing and enrollment events"
const REASON = "connection reset by peer while reading the response headers from the destination"

describe("console: lists fit the screen", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
    it.effect(
      "with long names, reasons and times, the deliveries and endpoints lists fit 1280 px and read as cards at 360 px",
      () =>
        Effect.gen(function* () {
          const { receiver, endpointId, owner } = yield* receiverEndpoint(SLUG, "/hook", [EVENT])
          receiver.respond("/hook", () => ({ status: 500, body: "down" }))
          for (let i = 0; i < 6; i++) yield* publishEvent(EVENT, SLUG, examplePayload(EVENT))
          yield* awaitDeliveries(
            endpointId,
            (rows) => rows.length === 6 && rows.every((row) => row.status === "failed"),
          )
          // The longest a row gets: long names, a long reason, and a next retry on a held delivery.
          yield* query(
            (sql) => sql`
              update owners set name = ${OWNER_NAME} where id = ${owner.id}`,
          )
          yield* query(
            (sql) => sql`
              update webhook_endpoints
              set name = ${ENDPOINT_NAME}, status = 'suspended', suspension_reason = 'paused by the partner',
                  destination_url = ${`${receiver.url("/hook")}/a/very/long/path/for/every/leasing/event`}
              where id = ${endpointId}`,
          )
          yield* query(
            (sql) => sql`
              update webhook_deliveries
              set status = 'pending', next_retry_at = now() + interval '1 hour',
                  last_attempt_failure_reason = ${REASON}
              where endpoint_id = ${endpointId}`,
          )

          const { page, origin, problems } = yield* openConsole
          yield* signIn(page, origin, yield* operatorAccount(service.env, "viewer", "lists"))
          const lists = [
            { name: "deliveries", path: `/deliveries?owner=${SLUG}`, row: "tr[data-delivery-id]" },
            { name: "endpoints", path: `/endpoints?owner=${SLUG}`, row: "tr[data-endpoint-id]" },
          ]
          for (const width of [1280, 360] as const) {
            yield* promise(() => page.setViewportSize({ width, height: 800 }))
            for (const list of lists) {
              yield* promise(() => page.goto(`${origin}${list.path}`))
              yield* promise(() => page.locator(list.row).first().waitFor())
              const layout = yield* tableLayout(page)
              assert.deepStrictEqual(layout.scrolling, [], `${list.name} at ${width} px: no table scrolls`)
              assert.deepStrictEqual(
                yield* sidewaysOverflow(page),
                [],
                `${list.name} at ${width} px: the page does not scroll sideways`,
              )
              if (width === 360) {
                assert.strictEqual(layout.rowsNotCards, 0, `${list.name} at 360 px: rows are cards`)
                // A card shows every column, each under its name.
                const row = page.locator(list.row).first()
                const card = yield* promise(() => row.innerText())
                for (const value of list.name === "deliveries"
                  ? [EVENT, "pending", ENDPOINT_NAME, OWNER_NAME, REASON]
                  : [ENDPOINT_NAME, OWNER_NAME, "suspended", "paused by the partner", EVENT])
                  assert.include(card, value, `${list.name} card at 360 px`)
                const cells = yield* promise(() =>
                  row.evaluate((tr) =>
                    [...tr.children].map((td) => ({
                      label: td.getAttribute("data-label"),
                      shown: (globalThis as unknown as TableWindow).getComputedStyle(td).display !== "none",
                    })),
                  ),
                )
                assert.isTrue(
                  cells.every((cell) => cell.shown && cell.label !== null),
                  `${list.name} card at 360 px: every cell shown under its name`,
                )
                for (const label of list.name === "deliveries"
                  ? [
                      "Delivery",
                      "Event",
                      "Status",
                      "Endpoint",
                      "Attempts",
                      "Last response",
                      "Next retry",
                      "Created",
                    ]
                  : [
                      "Endpoint",
                      "Subscriber",
                      "Destination",
                      "Events",
                      "Status",
                      "Success (1 h)",
                      "p95 (1 h)",
                    ])
                  assert.include(
                    cells.map((cell) => cell.label),
                    label,
                  )
              }
              yield* promise(() => assertAccessible(page, `${list.name} at ${width} px`))
              yield* screenshot(page, `list-${list.name}-${width}`)
            }
          }
          assert.deepStrictEqual(problems(), [])
        }),
    )
  })
})

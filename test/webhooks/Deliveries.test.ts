import { assert, describe, layer } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { Db } from "../../backend/platform/Db.ts"
import { createOwner } from "../support/Auth.ts"
import {
  api,
  createEndpoint,
  deliveryRow,
  ENVELOPE,
  insertDelivery,
  ownerEndpoints,
  ownerWithPartner,
  providerEndpoints,
  provisionProvider,
  query,
  webhookPartner,
  webhookService,
} from "../support/Webhooks.ts"

const service = webhookService()

interface DeliveryBody {
  readonly id: number
  readonly endpoint_id: number
  readonly status: string
  readonly attempt_number: number
  readonly payload: unknown
  readonly last_attempted_at: string | null
  readonly delivered_at: string | null
  readonly next_retry_at: string | null
  readonly last_attempt_failure_reason: string | null
  readonly duration_ms: number | null
  readonly created_at: string
  readonly updated_at: string
  readonly attempts?: ReadonlyArray<Record<string, unknown>>
}

interface ListBody {
  readonly status_code: number
  readonly deliveries: ReadonlyArray<DeliveryBody>
  readonly meta: { page: number; per_page: number; total_count: number; total_pages: number }
}

/** An owner with a partner, one endpoint and `count` pending deliveries (oldest first). */
const endpointWithDeliveries = (slug: string, count: number) =>
  Effect.gen(function* () {
    const partner = yield* ownerWithPartner(slug)
    const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug))
    const ids: Array<number> = []
    for (let i = 0; i < count; i++) ids.push(yield* insertDelivery(endpoint.id))
    return { partner, endpoint, ids, base: `${ownerEndpoints(slug)}/${endpoint.id}/deliveries` }
  })

describe("webhook deliveries", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("lists deliveries newest first, 25 a page by default, with the published meta", () =>
      Effect.gen(function* () {
        const { partner, endpoint, ids, base } = yield* endpointWithDeliveries("paging", 30)
        const first = yield* api(partner, "GET", base)
        assert.strictEqual(first.status, 200, first.text)
        const body = first.body as unknown as ListBody
        assert.deepStrictEqual(Object.keys(body), ["status_code", "deliveries", "meta"])
        assert.deepStrictEqual(body.meta, { page: 1, per_page: 25, total_count: 30, total_pages: 2 })
        assert.deepStrictEqual(
          body.deliveries.map((d) => d.id),
          [...ids].reverse().slice(0, 25),
        )
        const delivery = body.deliveries[0]!
        assert.deepStrictEqual(Object.keys(delivery).sort(), [
          "attempt_number",
          "created_at",
          "delivered_at",
          "duration_ms",
          "endpoint_id",
          "id",
          "last_attempt_failure_reason",
          "last_attempted_at",
          "next_retry_at",
          "payload",
          "status",
          "updated_at",
        ])
        assert.strictEqual(delivery.endpoint_id, endpoint.id)
        assert.strictEqual(delivery.status, "pending")
        assert.strictEqual(delivery.attempt_number, 1)
        assert.deepStrictEqual(delivery.payload, ENVELOPE)

        const second = yield* api(partner, "GET", `${base}?page=2`)
        const page2 = second.body as unknown as ListBody
        assert.deepStrictEqual(page2.meta, { page: 2, per_page: 25, total_count: 30, total_pages: 2 })
        assert.deepStrictEqual(
          page2.deliveries.map((d) => d.id),
          [...ids].reverse().slice(25),
        )
        const small = yield* api(partner, "GET", `${base}?page=3&per_page=7`)
        const page3 = small.body as unknown as ListBody
        assert.deepStrictEqual(page3.meta, { page: 3, per_page: 7, total_count: 30, total_pages: 5 })
        assert.deepStrictEqual(
          page3.deliveries.map((d) => d.id),
          [...ids].reverse().slice(14, 21),
        )
        const beyond = yield* api(partner, "GET", `${base}?page=9&per_page=100`)
        const page9 = beyond.body as unknown as ListBody
        assert.deepStrictEqual(page9.deliveries, [])
        assert.deepStrictEqual(page9.meta, { page: 9, per_page: 100, total_count: 30, total_pages: 1 })
      }),
    )

    it.effect("filters on status", () =>
      Effect.gen(function* () {
        const { partner, endpoint, base } = yield* endpointWithDeliveries("filtering", 2)
        const failed = [
          yield* insertDelivery(endpoint.id, { status: "failed", last_attempt_failure_reason: "HTTP 500" }),
          yield* insertDelivery(endpoint.id, { status: "failed", last_attempt_failure_reason: "timeout" }),
        ]
        yield* insertDelivery(endpoint.id, { status: "retrying", attempt_number: 4 })
        const answer = yield* api(partner, "GET", `${base}?status=failed&per_page=1`)
        assert.strictEqual(answer.status, 200, answer.text)
        const body = answer.body as unknown as ListBody
        assert.deepStrictEqual(body.meta, { page: 1, per_page: 1, total_count: 2, total_pages: 2 })
        assert.deepStrictEqual(
          body.deliveries.map((d) => [d.id, d.status, d.last_attempt_failure_reason]),
          [[failed[1]!, "failed", "timeout"]],
        )
        const none = yield* api(partner, "GET", `${base}?status=delivered`)
        assert.deepStrictEqual((none.body as unknown as ListBody).meta, {
          page: 1,
          per_page: 25,
          total_count: 0,
          total_pages: 0,
        })
      }),
    )

    it.effect(
      "shows a delivery whose attempt holds a lease as delivering, with no next attempt due, until it runs out",
      () =>
        Effect.gen(function* () {
          const { partner, endpoint, ids, base } = yield* endpointWithDeliveries("leased", 1)
          const due = new Date(Date.now() - 60_000)
          const inFlight = [
            yield* insertDelivery(endpoint.id, { lease_until: new Date(Date.now() + 60_000) }),
            yield* insertDelivery(endpoint.id, {
              status: "retrying",
              attempt_number: 3,
              next_retry_at: due,
              lease_until: new Date(Date.now() + 60_000),
            }),
          ]
          const ranOut = yield* insertDelivery(endpoint.id, {
            status: "retrying",
            attempt_number: 2,
            next_retry_at: due,
            lease_until: new Date(Date.now() - 1000),
          })
          const shown = (query: string) =>
            api(partner, "GET", `${base}${query}`).pipe(
              Effect.map((answer) =>
                (answer.body as unknown as ListBody).deliveries.map((d) => [d.id, d.status, d.next_retry_at]),
              ),
            )
          assert.deepStrictEqual(yield* shown(""), [
            [ranOut, "retrying", due.toISOString()],
            [inFlight[1]!, "delivering", null],
            [inFlight[0]!, "delivering", null],
            [ids[0]!, "pending", null],
          ])
          assert.deepStrictEqual(yield* shown("?status=delivering"), [
            [inFlight[1]!, "delivering", null],
            [inFlight[0]!, "delivering", null],
          ])
          assert.deepStrictEqual(yield* shown("?status=pending"), [[ids[0]!, "pending", null]])
          assert.deepStrictEqual(yield* shown("?status=retrying"), [[ranOut, "retrying", due.toISOString()]])
          const one = yield* api(partner, "GET", `${base}/${inFlight[1]!}`)
          const delivery = (one.body as unknown as { readonly delivery: DeliveryBody }).delivery
          assert.deepStrictEqual([delivery.status, delivery.next_retry_at], ["delivering", null])
        }),
    )

    it.effect("refuses paging and filters that mean nothing with a 422", () =>
      Effect.gen(function* () {
        const { partner, base } = yield* endpointWithDeliveries("bad-query", 1)
        const cases: ReadonlyArray<readonly [string, Record<string, string>]> = [
          ["?page=0", { page: "Page must be a positive integer" }],
          ["?page=-2", { page: "Page must be a positive integer" }],
          ["?page=abc", { page: "Page must be a positive integer" }],
          ["?page=1.5", { page: "Page must be a positive integer" }],
          ["?per_page=0", { per_page: "Per page must be an integer from 1 to 100" }],
          ["?per_page=101", { per_page: "Per page must be an integer from 1 to 100" }],
          [
            "?status=lost",
            {
              status: "Status must be one of pending, delivering, delivered, retrying, rate_limited, failed",
            },
          ],
          [
            "?page=x&per_page=y",
            {
              page: "Page must be a positive integer",
              per_page: "Per page must be an integer from 1 to 100",
            },
          ],
        ]
        for (const [search, fields] of cases) {
          const answer = yield* api(partner, "GET", `${base}${search}`)
          assert.strictEqual(answer.status, 422, `${search}: ${answer.text}`)
          assert.deepStrictEqual(answer.body, {
            status_code: 422,
            error: "Invalid delivery params.",
            delivery: fields,
            errors: Object.fromEntries(Object.entries(fields).map(([field, message]) => [field, [message]])),
          })
        }
      }),
    )

    it.effect("shows one delivery with its payload and every attempt", () =>
      Effect.gen(function* () {
        const { partner, endpoint, base } = yield* endpointWithDeliveries("detail", 0)
        const id = yield* insertDelivery(endpoint.id, {
          status: "retrying",
          attempt_number: 3,
          next_retry_at: new Date("2030-01-01T00:00:00Z"),
          last_attempt_failure_reason: "HTTP 503",
        })
        const started = new Date("2026-01-02T03:04:05.678Z")
        const body = "x".repeat(5000)
        yield* query(
          (sql) => sql`
            insert into webhook_attempts (delivery_id, series, attempt_number, started_at, status_code, duration_ms,
                                          failure_reason, response_body)
            values (${id}, 1, 2, ${new Date(started.getTime() + 4000)}, 503, 12, 'HTTP 503', 'busy'),
                   (${id}, 1, 1, ${started}, null, 10000, 'Timed out after 10000 ms', null),
                   (${id}, 0, 1, ${started}, 500, 3, 'HTTP 500', ${body})`,
        )
        yield* query(
          (sql) =>
            sql`update webhook_deliveries set last_attempted_at = ${started}, duration_ms = 12 where id = ${id}`,
        )
        const answer = yield* api(partner, "GET", `${base}/${id}`)
        assert.strictEqual(answer.status, 200, answer.text)
        assert.deepStrictEqual(Object.keys(answer.body!), ["status_code", "delivery"])
        const delivery = answer.body!.delivery as DeliveryBody
        assert.strictEqual(delivery.id, id)
        assert.strictEqual(delivery.status, "retrying")
        assert.strictEqual(delivery.attempt_number, 3)
        assert.deepStrictEqual(delivery.payload, ENVELOPE)
        assert.strictEqual(delivery.next_retry_at, "2030-01-01T00:00:00.000Z")
        assert.strictEqual(delivery.last_attempted_at, "2026-01-02T03:04:05.678Z")
        assert.strictEqual(delivery.last_attempt_failure_reason, "HTTP 503")
        assert.strictEqual(delivery.duration_ms, 12)
        assert.isNull(delivery.delivered_at)
        assert.deepStrictEqual(delivery.attempts, [
          {
            series: 0,
            attempt_number: 1,
            started_at: "2026-01-02T03:04:05.678Z",
            status_code: 500,
            duration_ms: 3,
            failure_reason: "HTTP 500",
            response_body: "x".repeat(4096),
          },
          {
            series: 1,
            attempt_number: 1,
            started_at: "2026-01-02T03:04:05.678Z",
            status_code: null,
            duration_ms: 10000,
            failure_reason: "Timed out after 10000 ms",
            response_body: null,
          },
          {
            series: 1,
            attempt_number: 2,
            started_at: "2026-01-02T03:04:09.678Z",
            status_code: 503,
            duration_ms: 12,
            failure_reason: "HTTP 503",
            response_body: "busy",
          },
        ])
      }),
    )

    it.effect("answers 404 for delivery ids that name no delivery of the endpoint", () =>
      Effect.gen(function* () {
        const { partner, endpoint, ids, base } = yield* endpointWithDeliveries("delivery-ids", 1)
        const other = yield* createEndpoint(partner, ownerEndpoints("delivery-ids"), {
          name: "Other",
          destination_url: "https://other.example.com/h",
          events: ["prospect.ready"],
        })
        const foreign = yield* insertDelivery(other.id)
        for (const id of ["abc", "0", "-1", "99999999", String(foreign), "9".repeat(30)]) {
          for (const [method, path] of [
            ["GET", `${base}/${encodeURIComponent(id)}`],
            ["POST", `${base}/${encodeURIComponent(id)}/retry`],
          ] as const) {
            const answer = yield* api(partner, method, path)
            assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
            assert.deepStrictEqual(answer.body, { status_code: 404, error: "Delivery not found." })
          }
        }
        for (const endpointId of ["abc", "0", "99999999"]) {
          const answer = yield* api(
            partner,
            "GET",
            `${ownerEndpoints("delivery-ids")}/${endpointId}/deliveries/${ids[0]}`,
          )
          assert.deepStrictEqual(answer.body, { status_code: 404, error: "Endpoint not found." })
        }
        assert.strictEqual((yield* deliveryRow(foreign)).series, 1)
        assert.notStrictEqual(endpoint.id, other.id)
      }),
    )

    it.effect("retry starts a new series at attempt 1, due now, and wakes the scheduler", () =>
      Effect.gen(function* () {
        const { partner, endpoint, base } = yield* endpointWithDeliveries("retrying", 0)
        const id = yield* insertDelivery(endpoint.id, {
          status: "failed",
          attempt_number: 25,
          last_attempt_failure_reason: "HTTP 500",
        })
        const wakeups = yield* Queue.unbounded<string>()
        const db = yield* Db
        yield* db.listen("webhook_due", (payload) => Queue.offerUnsafe(wakeups, payload))
        const answer = yield* api(partner, "POST", `${base}/${id}/retry`, {})
        assert.strictEqual(answer.status, 204)
        assert.strictEqual(answer.text, "")
        const [row] = yield* query(
          (sql) => sql<
            Array<{
              status: string
              series: number
              attempt_number: number
              due_now: boolean
              last_attempt_failure_reason: string | null
            }>
          >`
            select status, series, attempt_number, last_attempt_failure_reason,
                   next_retry_at between now() - interval '1 minute' and now() as due_now
            from webhook_deliveries where id = ${id}`,
        )
        assert.deepStrictEqual(row, {
          status: "pending",
          series: 2,
          attempt_number: 1,
          due_now: true,
          last_attempt_failure_reason: "HTTP 500",
        })
        yield* Queue.take(wakeups).pipe(Effect.timeout("5 seconds"))

        const again = yield* api(partner, "POST", `${base}/${id}/retry`)
        assert.strictEqual(again.status, 204)
        assert.strictEqual((yield* deliveryRow(id)).series, 3, "each retry is a new series")

        const delivered = yield* insertDelivery(endpoint.id, {
          status: "delivered",
          delivered_at: new Date(),
        })
        const resend = yield* api(partner, "POST", `${base}/${delivered}/retry`)
        assert.strictEqual(resend.status, 204)
        assert.strictEqual((yield* deliveryRow(delivered)).status, "pending", "a delivered one is sent again")

        // One in flight: its attempt's lease no longer holds the new series back.
        const leased = yield* insertDelivery(endpoint.id, { lease_until: new Date(Date.now() + 60_000) })
        assert.strictEqual((yield* api(partner, "POST", `${base}/${leased}/retry`)).status, 204)
        const retried = yield* deliveryRow(leased)
        assert.deepStrictEqual([retried.status, retried.series, retried.lease_until], ["pending", 2, null])
      }).pipe(Effect.scoped),
    )

    it.effect("serves the same delivery routes on the provider path", () =>
      Effect.gen(function* () {
        yield* createOwner("provided")
        yield* provisionProvider("delivery-co", { owners: ["provided"] })
        const partner = yield* webhookPartner({ provider: "delivery-co" })
        const endpoint = yield* createEndpoint(partner, providerEndpoints("delivery-co"))
        const id = yield* insertDelivery(endpoint.id, { status: "failed", attempt_number: 25 })
        const base = `${providerEndpoints("delivery-co")}/${endpoint.id}/deliveries`
        const listed = yield* api(partner, "GET", `${base}?status=failed`)
        assert.strictEqual(listed.status, 200, listed.text)
        assert.deepStrictEqual(
          (listed.body as unknown as ListBody).deliveries.map((d) => d.id),
          [id],
        )
        const shown = yield* api(partner, "GET", `${base}/${id}`)
        assert.strictEqual(shown.status, 200, shown.text)
        assert.deepStrictEqual((shown.body!.delivery as DeliveryBody).attempts, [])
        const retried = yield* api(partner, "POST", `${base}/${id}/retry`)
        assert.strictEqual(retried.status, 204)
        const row = yield* deliveryRow(id)
        assert.deepStrictEqual([row.status, row.series, row.attempt_number], ["pending", 2, 1])
      }),
    )
  })
})

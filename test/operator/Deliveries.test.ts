import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Deliveries, type Delivery } from "../../backend/operator/DeliveryQueries.ts"
import { Endpoints } from "../../backend/webhooks/endpoints/Endpoints.ts"
import { endpoint, enginePlatform, owner, provider, query, subscriber } from "../support/WebhookEngine.ts"

const platform = enginePlatform()
const testLayer = Deliveries.layer.pipe(
  Layer.provideMerge(Endpoints.layer),
  Layer.provideMerge(platform.layer),
)

const T0 = Date.parse("2026-03-01T00:00:00Z")

/**
 * Deliveries written as the router writes them, with chosen times and states: two owners' endpoints and a
 * provider's endpoint covering both.
 */
const seed = Effect.gen(function* () {
  const acme = yield* owner("acme-list")
  const beta = yield* owner("beta-list")
  const acmeSub = yield* subscriber({ ownerId: acme.id })
  const betaSub = yield* subscriber({ ownerId: beta.id })
  const pms = yield* subscriber({ providerId: yield* provider("pms-list", { owners: [acme.id, beta.id] }) })
  const acmeEndpoint = yield* endpoint(acmeSub.id, "https://acme.example/hooks", ["policy.created"])
  const betaEndpoint = yield* endpoint(betaSub.id, "https://beta.example/hooks", ["policy.created"])
  const pmsEndpoint = yield* endpoint(pms.id, "https://pms.example/hooks", ["policy.created"])
  const pmsOther = yield* endpoint(pms.id, "https://pms.example/other", ["policy.created"])
  const endpoints = [acmeEndpoint, betaEndpoint, pmsEndpoint, pmsOther]
  // 60 deliveries, one per minute; several share a created_at (one routing statement) to test the id tie-break.
  yield* query(
    (sql) => sql`
      insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, status, created_at,
                                      held_since, lease_until, next_retry_at)
      select (${endpoints}::bigint[])[1 + i % 4], 'event-' || i,
             case when i % 3 = 0 then 'policy.created' else 'policy.canceled' end,
             case when i % 2 = 0 then 'acme-list' else 'beta-list' end,
             convert_to('{"n":' || i || '}', 'UTF8'),
             (array['pending', 'delivered', 'retrying', 'failed', 'rate_limited'])[1 + i % 5],
             ${new Date(T0)}::timestamptz + (i / 2) * interval '1 minute',
             case when i % 10 = 2 then now() end,
             case when i % 10 = 5 then now() + interval '1 hour' end,
             case when i % 5 = 2 then now() + interval '1 hour' end
      from generate_series(0, 59) i`,
  )
  const rows = yield* query(
    (sql) => sql<
      Array<{
        id: string
        endpoint_id: string
        created_at: Date
        event: string
        owner_slug: string
        status: string
        held_since: Date | null
        lease: boolean
      }>
    >`
      select id, endpoint_id, created_at, event, owner_slug, status, held_since, lease_until > now() as lease
      from webhook_deliveries order by created_at desc, id desc`,
  )
  return { endpoints, rows, acmeEndpoint, pmsEndpoint, pmsOther }
})

/** Every page of a filter, following the cursor; the ids in order. */
const allPages = (filter: Record<string, string>, limit: number) =>
  Effect.gen(function* () {
    const deliveries = yield* Deliveries
    const seen: Array<Delivery> = []
    let cursor: string | null = null
    let pages = 0
    do {
      const page: { deliveries: ReadonlyArray<Delivery>; next_cursor: string | null } =
        yield* deliveries.list({
          ...filter,
          limit: String(limit),
          ...(cursor === null ? {} : { cursor }),
        })
      assert.isAtMost(page.deliveries.length, limit)
      seen.push(...page.deliveries)
      cursor = page.next_cursor
      pages++
    } while (cursor !== null && pages < 100)
    return seen
  })

describe("operator delivery list", () => {
  layer(testLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("lists every delivery newest first, by cursor, under each filter, and counts a filter", () =>
      Effect.gen(function* () {
        const { rows, acmeEndpoint, pmsEndpoint, pmsOther } = yield* seed
        const deliveries = yield* Deliveries
        const shown = (row: (typeof rows)[number]) =>
          row.held_since !== null
            ? "held"
            : row.lease && row.status !== "delivered" && row.status !== "failed"
              ? "delivering"
              : row.status
        const cases: ReadonlyArray<[Record<string, string>, (r: (typeof rows)[number]) => boolean]> = [
          [{}, () => true],
          [{ owner: "acme-list" }, (r) => r.owner_slug === "acme-list"],
          [{ provider: "pms-list" }, (r) => [pmsEndpoint, pmsOther].includes(Number(r.endpoint_id))],
          [{ provider: "pms-list", endpoint: String(pmsOther) }, (r) => Number(r.endpoint_id) === pmsOther],
          [{ provider: "pms-list", endpoint: String(acmeEndpoint) }, () => false],
          [{ provider: "nobody" }, () => false],
          [{ endpoint: String(acmeEndpoint) }, (r) => Number(r.endpoint_id) === acmeEndpoint],
          [{ event_type: "policy.created" }, (r) => r.event === "policy.created"],
          [{ status: "held" }, (r) => shown(r) === "held"],
          [{ status: "delivering" }, (r) => shown(r) === "delivering"],
          [{ status: "pending" }, (r) => shown(r) === "pending"],
          [{ status: "failed" }, (r) => shown(r) === "failed"],
          [{ since: "2026-03-01T00:10:00Z" }, (r) => r.created_at.getTime() >= T0 + 10 * 60_000],
          [{ until: "2026-03-01T00:10:00Z" }, (r) => r.created_at.getTime() < T0 + 10 * 60_000],
          [
            { since: "2026-03-01T00:05:00Z", until: "2026-03-01T00:20:00+00:00", owner: "beta-list" },
            (r) =>
              r.owner_slug === "beta-list" &&
              r.created_at.getTime() >= T0 + 5 * 60_000 &&
              r.created_at.getTime() < T0 + 20 * 60_000,
          ],
          [{ id: rows[7]!.id }, (r) => r.id === rows[7]!.id],
          [
            { status: "retrying", provider: "pms-list" },
            (r) => shown(r) === "retrying" && [pmsEndpoint, pmsOther].includes(Number(r.endpoint_id)),
          ],
        ]
        for (const [filter, matches] of cases) {
          const expected = rows.filter(matches).map((r) => Number(r.id))
          for (const limit of [1, 7, 100]) {
            const seen = yield* allPages(filter, limit)
            assert.deepStrictEqual(
              seen.map((d) => d.id),
              expected,
              `${JSON.stringify(filter)} by ${limit}`,
            )
          }
          assert.strictEqual(yield* deliveries.count(filter), expected.length, JSON.stringify(filter))
        }
        assert.isAbove(rows.filter((r) => shown(r) === "held").length, 0)
        assert.isAbove(rows.filter((r) => shown(r) === "delivering").length, 0)

        const [first] = (yield* deliveries.list({ endpoint: String(pmsEndpoint), limit: "1" })).deliveries
        assert.deepStrictEqual(first!.provider, { name: "pms-list" })
        assert.strictEqual(first!.endpoint.destination_url, "https://pms.example/hooks")
        assert.strictEqual(first!.owner!.name, `Owner ${first!.owner!.slug}`)
        const [own] = (yield* deliveries.list({ endpoint: String(acmeEndpoint), limit: "1" })).deliveries
        assert.isNull(own!.provider)
        assert.deepStrictEqual(own!.owner, { slug: "acme-list", name: "Owner acme-list" })
      }),
    )

    it.effect("refuses filter, cursor and limit values that mean nothing, naming each field", () =>
      Effect.gen(function* () {
        const deliveries = yield* Deliveries
        const refused = (input: Record<string, unknown>) =>
          Effect.map(Effect.flip(deliveries.list(input)), (error) => error.fields)
        assert.deepStrictEqual(
          yield* refused({
            since: "yesterday",
            status: "lost",
            endpoint: "abc",
            id: "-1",
            event_type: "Policy Created",
            limit: "101",
            cursor: "not-a-cursor",
          }),
          {
            since: "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z",
            status: "must be one of pending, delivering, delivered, retrying, rate_limited, failed, held",
            endpoint: "must be an endpoint id (a whole number)",
            id: "must be a delivery id (a whole number)",
            event_type: "must be an event name such as policy.created",
            limit: "must be an integer from 1 to 100",
            cursor: "is not a cursor of this list",
          },
        )
        assert.deepStrictEqual(yield* refused({ limit: "0" }), { limit: "must be an integer from 1 to 100" })
        assert.deepStrictEqual(
          yield* refused({ since: "2026-03-02T00:00:00Z", until: "2026-03-01T00:00:00Z" }),
          {
            until: "must be later than since",
          },
        )
        assert.deepStrictEqual(yield* refused({ owner: "a\u0000b" }), {
          owner: "must be an owner slug or part of an owner's name",
        })
        assert.deepStrictEqual((yield* Effect.flip(deliveries.count({ since: "2026-02-30" }))).fields, {
          since: "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z",
        })
        // Empty values are no filter.
        const page = yield* deliveries.list({ owner: "", status: "", limit: "2" })
        assert.strictEqual(page.deliveries.length, 2)
      }),
    )
  })
})

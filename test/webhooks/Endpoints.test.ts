import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createOwner } from "../support/Auth.ts"
import {
  api,
  createEndpoint,
  deliveryRow,
  ENDPOINT,
  type EndpointBody,
  insertDelivery,
  ownerEndpoints,
  ownerWithPartner,
  providerEndpoints,
  provisionProvider,
  query,
  webhookPartner,
  webhookService,
} from "../support/Webhooks.ts"
import { ISO } from "../support/EndpointBodies.ts"

const service = webhookService()

describe("webhook endpoints", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "creates an endpoint in the published shape, with the owner's subscriber and first secret",
      () =>
        Effect.gen(function* () {
          const partner = yield* ownerWithPartner("first-use")
          const before = yield* query(
            (sql) => sql`select 1 from webhook_subscribers s join owners o on o.id = s.owner_id
                       where o.slug = 'first-use'`,
          )
          assert.strictEqual(before.length, 0, "no subscriber before the first endpoint")
          const answer = yield* api(partner, "POST", ownerEndpoints("first-use"), { endpoint: ENDPOINT })
          assert.strictEqual(answer.status, 200, answer.text)
          assert.deepStrictEqual(Object.keys(answer.body!), ["status_code", "endpoint"])
          assert.strictEqual(answer.body!.status_code, 200)
          const endpoint = answer.body!.endpoint as EndpointBody
          assert.deepStrictEqual(Object.keys(endpoint).sort(), [
            "created_at",
            "destination_url",
            "events",
            "id",
            "name",
            "status",
            "suspension_reason",
            "updated_at",
          ])
          assert.isTrue(Number.isInteger(endpoint.id))
          assert.strictEqual(endpoint.name, ENDPOINT.name)
          assert.strictEqual(endpoint.destination_url, ENDPOINT.destination_url)
          assert.deepStrictEqual(endpoint.events, ENDPOINT.events)
          assert.strictEqual(endpoint.status, "active")
          assert.isNull(endpoint.suspension_reason)
          assert.match(endpoint.created_at, ISO)
          assert.match(endpoint.updated_at, ISO)
          assert.notInclude(answer.text, "whsec_", "the signing secret never travels through the API")

          const secrets = yield* query(
            (sql) => sql<Array<{ secret_sealed: Buffer; expires_at: Date | null }>>`
            select w.secret_sealed, w.expires_at from webhook_secrets w
            join webhook_subscribers s on s.id = w.subscriber_id join owners o on o.id = s.owner_id
            where o.slug = 'first-use'`,
          )
          assert.strictEqual(secrets.length, 1)
          assert.isNull(secrets[0]!.expires_at)
          assert.notInclude(secrets[0]!.secret_sealed.toString("latin1"), "whsec_", "sealed at rest")

          const second = yield* createEndpoint(partner, ownerEndpoints("first-use"), {
            ...ENDPOINT,
            name: "Second",
          })
          assert.notStrictEqual(second.id, endpoint.id)
          const after = yield* query(
            (sql) => sql<Array<{ subscribers: string; secrets: string }>>`
            select count(distinct s.id) as subscribers, count(w.id) as secrets
            from webhook_subscribers s join owners o on o.id = s.owner_id
            left join webhook_secrets w on w.subscriber_id = s.id where o.slug = 'first-use'`,
          )
          assert.deepStrictEqual(after[0], { subscribers: "1", secrets: "1" }, "one subscriber, one secret")
        }),
    )

    it.effect("two first endpoints at once still make one subscriber with one secret", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("racing")
        const answers = yield* Effect.all(
          Array.from({ length: 4 }, (_, i) =>
            api(partner, "POST", ownerEndpoints("racing"), { endpoint: { ...ENDPOINT, name: `E${i}` } }),
          ),
          { concurrency: "unbounded" },
        )
        for (const answer of answers) assert.strictEqual(answer.status, 200, answer.text)
        const [counts] = yield* query(
          (sql) => sql<Array<{ subscribers: string; secrets: string }>>`
            select count(distinct s.id) as subscribers, count(distinct w.id) as secrets
            from webhook_subscribers s join owners o on o.id = s.owner_id
            left join webhook_secrets w on w.subscriber_id = s.id where o.slug = 'racing'`,
        )
        assert.deepStrictEqual(counts, { subscribers: "1", secrets: "1" })
      }),
    )

    it.effect("lists, fetches and updates endpoints; an omitted field keeps its value", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("crud")
        const base = ownerEndpoints("crud")
        const empty = yield* api(partner, "GET", base)
        assert.strictEqual(empty.status, 200, empty.text)
        assert.deepStrictEqual(empty.body, { status_code: 200, endpoints: [] })

        const first = yield* createEndpoint(partner, base)
        const second = yield* createEndpoint(partner, base, {
          name: "Second",
          destination_url: "https://other.example.com/h",
          events: ["prospect.ready", "prospect.ready", "delinquency.created"],
        })
        assert.deepStrictEqual(
          second.events,
          ["prospect.ready", "delinquency.created"],
          "duplicates collapsed",
        )

        const listed = yield* api(partner, "GET", base)
        assert.deepStrictEqual(listed.body, { status_code: 200, endpoints: [first, second] })
        const fetched = yield* api(partner, "GET", `${base}/${first.id}`)
        assert.deepStrictEqual(fetched.body, { status_code: 200, endpoint: first })

        const renamed = yield* api(partner, "PUT", `${base}/${first.id}`, { endpoint: { name: "Renamed" } })
        assert.strictEqual(renamed.status, 200, renamed.text)
        const updated = renamed.body!.endpoint as EndpointBody
        assert.deepStrictEqual(
          { ...updated, updated_at: first.updated_at },
          { ...first, name: "Renamed" },
          "only the name changed",
        )
        assert.isTrue(updated.updated_at >= first.updated_at)

        const suspended = yield* api(partner, "PUT", `${base}/${first.id}`, {
          endpoint: {
            destination_url: "https://new-url.example.com/hook",
            events: ["prospect.created", "prospect.incomplete"],
            status: "suspended",
          },
        })
        assert.strictEqual(suspended.status, 200, suspended.text)
        assert.deepStrictEqual(
          {
            ...(suspended.body!.endpoint as EndpointBody),
            updated_at: first.updated_at,
          },
          {
            ...first,
            name: "Renamed",
            destination_url: "https://new-url.example.com/hook",
            events: ["prospect.created", "prospect.incomplete"],
            status: "suspended",
          },
        )
        const unchanged = yield* api(partner, "PUT", `${base}/${first.id}`, { endpoint: {} })
        assert.strictEqual(unchanged.status, 200, unchanged.text)
        assert.strictEqual((unchanged.body!.endpoint as EndpointBody).status, "suspended")
      }),
    )

    it.effect("a status set back to active clears the suspension reason", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("reason")
        const endpoint = yield* createEndpoint(partner, ownerEndpoints("reason"))
        yield* query(
          (sql) => sql`update webhook_endpoints set status = 'disabled',
                       suspension_reason = 'Destination answered 410 Gone' where id = ${endpoint.id}`,
        )
        const shown = yield* api(partner, "GET", `${ownerEndpoints("reason")}/${endpoint.id}`)
        assert.strictEqual(
          (shown.body!.endpoint as EndpointBody).suspension_reason,
          "Destination answered 410 Gone",
        )
        const renamed = yield* api(partner, "PUT", `${ownerEndpoints("reason")}/${endpoint.id}`, {
          endpoint: { name: "Still disabled" },
        })
        assert.strictEqual(
          (renamed.body!.endpoint as EndpointBody).suspension_reason,
          "Destination answered 410 Gone",
        )
        const active = yield* api(partner, "PUT", `${ownerEndpoints("reason")}/${endpoint.id}`, {
          endpoint: { status: "active" },
        })
        assert.strictEqual(active.status, 200, active.text)
        assert.strictEqual((active.body!.endpoint as EndpointBody).status, "active")
        assert.isNull((active.body!.endpoint as EndpointBody).suspension_reason)
      }),
    )

    it.effect("answers 404 for ids that name no endpoint", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("ids")
        const endpoint = yield* createEndpoint(partner, ownerEndpoints("ids"))
        for (const id of ["abc", "0", "-1", "1e3", `${endpoint.id}.0`, "99999999", "9".repeat(40), " 1"]) {
          for (const method of ["GET", "PUT", "DELETE"]) {
            const answer = yield* api(
              partner,
              method,
              `${ownerEndpoints("ids")}/${encodeURIComponent(id)}`,
              method === "PUT" ? { endpoint: { name: "x" } } : undefined,
            )
            assert.strictEqual(answer.status, 404, `${method} ${id}: ${answer.text}`)
            assert.deepStrictEqual(answer.body, { status_code: 404, error: "Endpoint not found." })
          }
        }
      }),
    )

    it.effect("keeps owners' and providers' endpoints apart: other routes answer 404", () =>
      Effect.gen(function* () {
        yield* createOwner("iso-a")
        yield* createOwner("iso-b")
        yield* provisionProvider("iso-co", { owners: ["iso-a", "iso-b"] })
        const partner = yield* webhookPartner({ owners: ["iso-a", "iso-b"], provider: "iso-co" })
        const ownerA = yield* createEndpoint(partner, ownerEndpoints("iso-a"))
        const provider = yield* createEndpoint(partner, providerEndpoints("iso-co"))
        const deliveryA = yield* insertDelivery(ownerA.id)
        const deliveryP = yield* insertDelivery(provider.id)

        const elsewhere: ReadonlyArray<readonly [string, number, number]> = [
          [ownerEndpoints("iso-b"), ownerA.id, deliveryA],
          [providerEndpoints("iso-co"), ownerA.id, deliveryA],
          [ownerEndpoints("iso-a"), provider.id, deliveryP],
          [ownerEndpoints("iso-b"), provider.id, deliveryP],
        ]
        for (const [base, id, delivery] of elsewhere) {
          for (const [method, path, body] of [
            ["GET", `${base}/${id}`, undefined],
            ["PUT", `${base}/${id}`, { endpoint: { name: "Taken" } }],
            ["DELETE", `${base}/${id}`, undefined],
            ["GET", `${base}/${id}/deliveries`, undefined],
            ["GET", `${base}/${id}/deliveries/${delivery}`, undefined],
            ["POST", `${base}/${id}/deliveries/${delivery}/retry`, undefined],
          ] as const) {
            const answer = yield* api(partner, method, path, body)
            assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
          }
        }
        const listA = yield* api(partner, "GET", ownerEndpoints("iso-a"))
        assert.deepStrictEqual(listA.body, { status_code: 200, endpoints: [ownerA] })
        const listB = yield* api(partner, "GET", ownerEndpoints("iso-b"))
        assert.deepStrictEqual(listB.body, { status_code: 200, endpoints: [] })
        const listP = yield* api(partner, "GET", providerEndpoints("iso-co"))
        assert.deepStrictEqual(listP.body, { status_code: 200, endpoints: [provider] })
        const rowA = yield* deliveryRow(deliveryA)
        assert.strictEqual(rowA.series, 1, "no retry went through another route")
      }),
    )

    it.effect("delete answers 204, hides the endpoint and cancels its undelivered deliveries", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("deleting")
        const base = ownerEndpoints("deleting")
        const endpoint = yield* createEndpoint(partner, base)
        const kept = yield* createEndpoint(partner, base, { ...ENDPOINT, name: "Kept" })
        const soon = new Date(Date.now() + 60_000)
        const open = yield* Effect.all([
          insertDelivery(endpoint.id),
          insertDelivery(endpoint.id, { status: "retrying", attempt_number: 3, next_retry_at: soon }),
          insertDelivery(endpoint.id, { status: "rate_limited", next_retry_at: soon }),
          insertDelivery(endpoint.id, { lease_until: soon }),
        ])
        const delivered = yield* insertDelivery(endpoint.id, {
          status: "delivered",
          delivered_at: new Date(),
        })
        const failed = yield* insertDelivery(endpoint.id, {
          status: "failed",
          last_attempt_failure_reason: "HTTP 500",
        })
        const otherEndpoint = yield* insertDelivery(kept.id)

        const answer = yield* api(partner, "DELETE", `${base}/${endpoint.id}`)
        assert.strictEqual(answer.status, 204)
        assert.strictEqual(answer.text, "")

        for (const id of open) {
          const row = yield* deliveryRow(id)
          assert.strictEqual(row.status, "failed", `delivery ${id}`)
          assert.strictEqual(row.last_attempt_failure_reason, "Endpoint deleted; delivery canceled")
          assert.isNull(row.next_retry_at)
          assert.isNull(row.lease_until)
        }
        assert.strictEqual((yield* deliveryRow(delivered)).status, "delivered")
        assert.strictEqual((yield* deliveryRow(failed)).last_attempt_failure_reason, "HTTP 500")
        assert.strictEqual((yield* deliveryRow(otherEndpoint)).status, "pending")

        const [stored] = yield* query(
          (sql) => sql<Array<{ deleted: boolean }>>`
            select deleted_at is not null as deleted from webhook_endpoints where id = ${endpoint.id}`,
        )
        assert.isTrue(stored!.deleted, "soft delete: the row stays for its deliveries")
        for (const [method, path] of [
          ["GET", `${base}/${endpoint.id}`],
          ["DELETE", `${base}/${endpoint.id}`],
          ["GET", `${base}/${endpoint.id}/deliveries`],
          ["GET", `${base}/${endpoint.id}/deliveries/${delivered}`],
          ["POST", `${base}/${endpoint.id}/deliveries/${delivered}/retry`],
        ] as const) {
          const gone = yield* api(partner, method, path)
          assert.strictEqual(gone.status, 404, `${method} ${path}`)
        }
        const listed = yield* api(partner, "GET", base)
        assert.deepStrictEqual(listed.body, { status_code: 200, endpoints: [kept] })
      }),
    )
  })
})

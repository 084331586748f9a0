import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { routesFor } from "../../backend/App.ts"
import { authEnv, authService, createOwner } from "../support/Auth.ts"
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

const service = webhookService()

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The published 422 of a create, with the `errors` every 422 of ours carries. */
const invalidParams = (fields: Record<string, string>) => ({
  status_code: 422,
  error: "Invalid endpoint params.",
  endpoint: fields,
  errors: Object.fromEntries(Object.entries(fields).map(([field, message]) => [field, [message]])),
})

const long = "x".repeat(50_000)

const invalidBodies: ReadonlyArray<{
  readonly name: string
  readonly body: unknown
  readonly fields: Record<string, string>
}> = [
  {
    name: "an http destination",
    body: { endpoint: { ...ENDPOINT, destination_url: "http://hooks.example.com/partner" } },
    fields: { destination_url: "Destination url must use HTTPS" },
  },
  {
    name: "another scheme",
    body: { endpoint: { ...ENDPOINT, destination_url: "ftp://hooks.example.com/partner" } },
    fields: { destination_url: "Destination url must use HTTPS" },
  },
  {
    name: "a destination that is no URL",
    body: { endpoint: { ...ENDPOINT, destination_url: "hooks.example.com/partner" } },
    fields: { destination_url: "Destination url is not a valid URL" },
  },
  {
    name: "a destination with spaces",
    body: { endpoint: { ...ENDPOINT, destination_url: "https://hooks.example.com/a b" } },
    fields: { destination_url: "Destination url is not a valid URL" },
  },
  {
    name: "credentials in the destination",
    body: { endpoint: { ...ENDPOINT, destination_url: "https://user:pw@hooks.example.com/partner" } },
    fields: { destination_url: "Destination url must not contain credentials" },
  },
  {
    name: "a destination too long",
    body: { endpoint: { ...ENDPOINT, destination_url: `https://hooks.example.com/${"a".repeat(2100)}` } },
    fields: { destination_url: "Destination url is too long (maximum is 2048 characters)" },
  },
  {
    name: "a destination that is not a string",
    body: { endpoint: { ...ENDPOINT, destination_url: 443 } },
    fields: { destination_url: "Destination url must be a string" },
  },
  {
    name: "missing fields",
    body: { endpoint: {} },
    fields: {
      name: "Name can't be blank",
      destination_url: "Destination url can't be blank",
      events: "Events can't be blank",
    },
  },
  {
    name: "a blank name",
    body: { endpoint: { ...ENDPOINT, name: "   " } },
    fields: { name: "Name can't be blank" },
  },
  {
    name: "a name too long",
    body: { endpoint: { ...ENDPOINT, name: long } },
    fields: { name: "Name is too long (maximum is 255 characters)" },
  },
  {
    name: "a name that is not a string",
    body: { endpoint: { ...ENDPOINT, name: ["Main"] } },
    fields: { name: "Name must be a string" },
  },
  {
    name: "no events",
    body: { endpoint: { ...ENDPOINT, events: [] } },
    fields: { events: "Events can't be blank" },
  },
  {
    name: "events that are not an array of names",
    body: { endpoint: { ...ENDPOINT, events: "prospect.ready" } },
    fields: { events: "Events must be an array of event names" },
  },
  {
    name: "an event that is not a string",
    body: { endpoint: { ...ENDPOINT, events: ["prospect.ready", 7] } },
    fields: { events: "Events must be an array of event names" },
  },
  {
    name: "unknown events and wildcards",
    body: { endpoint: { ...ENDPOINT, events: ["prospect.ready", "prospect.updated", "*", "policy.*"] } },
    fields: { events: "Events include unknown events: prospect.updated, *, policy.*" },
  },
  {
    name: "an invalid status",
    body: { endpoint: { ...ENDPOINT, status: "paused" } },
    fields: { status: "Status is invalid" },
  },
  {
    name: "no endpoint object",
    body: { name: "Main" },
    fields: { base: "Endpoint must be an object with name, destination_url and events" },
  },
  {
    name: "an endpoint that is an array",
    body: { endpoint: [ENDPOINT] },
    fields: { base: "Endpoint must be an object with name, destination_url and events" },
  },
  {
    name: "a body that is not an object",
    body: [ENDPOINT],
    fields: { base: "Endpoint must be an object with name, destination_url and events" },
  },
]

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

    for (const { name, body, fields } of invalidBodies) {
      it.effect(`refuses ${name} with the published 422 and creates nothing`, () =>
        Effect.gen(function* () {
          const slug = `bad-${name.replace(/[^a-z]+/g, "-")}`.slice(0, 40)
          const partner = yield* ownerWithPartner(slug)
          const answer = yield* api(partner, "POST", ownerEndpoints(slug), body)
          assert.strictEqual(answer.status, 422, answer.text)
          assert.deepStrictEqual(answer.body, invalidParams(fields))
          const listed = yield* api(partner, "GET", ownerEndpoints(slug))
          assert.deepStrictEqual(listed.body, { status_code: 200, endpoints: [] })
        }),
      )
    }

    it.effect("refuses a missing body with a 422, and a body that is not JSON with a 400", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("nobody")
        const missing = yield* api(partner, "POST", ownerEndpoints("nobody"))
        assert.strictEqual(missing.status, 422, missing.text)
        assert.deepStrictEqual(
          missing.body,
          invalidParams({ base: "Endpoint must be an object with name, destination_url and events" }),
        )
        const broken = yield* api(partner, "POST", ownerEndpoints("nobody"), '{"endpoint":')
        assert.strictEqual(broken.status, 400, broken.text)
        assert.deepStrictEqual(broken.body, { status_code: 400, error: "Request body is not valid JSON." })
      }),
    )

    it.effect("refuses an invalid update with 'Endpoint invalid.' and changes nothing", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("bad-update")
        const endpoint = yield* createEndpoint(partner, ownerEndpoints("bad-update"))
        const path = `${ownerEndpoints("bad-update")}/${endpoint.id}`
        const answer = yield* api(partner, "PUT", path, {
          endpoint: { destination_url: "http://new-url.example.com/hook", status: "paused", name: "Changed" },
        })
        assert.strictEqual(answer.status, 422, answer.text)
        assert.deepStrictEqual(answer.body, {
          status_code: 422,
          error: "Endpoint invalid.",
          endpoint: { destination_url: "Destination url must use HTTPS", status: "Status is invalid" },
          errors: { destination_url: ["Destination url must use HTTPS"], status: ["Status is invalid"] },
        })
        for (const bad of [{ events: [] }, { events: ["nope"] }, { name: "" }, { status: null }]) {
          const refused = yield* api(partner, "PUT", path, { endpoint: bad })
          assert.strictEqual(refused.status, 422, `${JSON.stringify(bad)}: ${refused.text}`)
        }
        const missing = yield* api(partner, "PUT", path)
        assert.strictEqual(missing.status, 422, missing.text)
        const fetched = yield* api(partner, "GET", path)
        assert.deepStrictEqual(fetched.body, { status_code: 200, endpoint })
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

    it.effect("needs the webhooks:manage scope", () =>
      Effect.gen(function* () {
        yield* createOwner("scoped")
        const partner = yield* webhookPartner({ owners: ["scoped"], scopes: ["prospects:read"] })
        const answer = yield* api(partner, "GET", ownerEndpoints("scoped"))
        assert.strictEqual(answer.status, 403)
        assert.strictEqual(answer.text, `{"message":"Forbidden"}`)
      }),
    )

    it.effect("answers 404 on the provider routes until the operators provisioned the provider", () =>
      Effect.gen(function* () {
        yield* createOwner("covered")
        const partner = yield* webhookPartner({ provider: "pending-co" })
        const base = providerEndpoints("pending-co")
        const notProvisioned = {
          status_code: 404,
          error: "Provider not found: its webhooks have not been provisioned by the service.",
        }
        for (const [method, path, body] of [
          ["POST", base, { endpoint: ENDPOINT }],
          ["POST", base, { endpoint: {} }],
          ["GET", base, undefined],
          ["GET", `${base}/1`, undefined],
          ["PUT", `${base}/1`, { endpoint: { name: "x" } }],
          ["DELETE", `${base}/1`, undefined],
          ["GET", `${base}/1/deliveries`, undefined],
          ["GET", `${base}/1/deliveries/1`, undefined],
          ["POST", `${base}/1/deliveries/1/retry`, undefined],
        ] as const) {
          const answer = yield* api(partner, method, path, body)
          assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
          assert.deepStrictEqual(answer.body, notProvisioned)
        }
        const other = yield* api(partner, "GET", providerEndpoints("someone-else"))
        assert.strictEqual(other.status, 403, "another provider's routes are forbidden")

        yield* provisionProvider("pending-co", { owners: ["covered"] })
        const created = yield* api(partner, "POST", base, { endpoint: ENDPOINT })
        assert.strictEqual(created.status, 200, created.text)
        const listed = yield* api(partner, "GET", base)
        assert.deepStrictEqual(listed.body, { status_code: 200, endpoints: [created.body!.endpoint] })
        const id = (created.body!.endpoint as EndpointBody).id
        const fetched = yield* api(partner, "GET", `${base}/${id}`)
        assert.deepStrictEqual(fetched.body, { status_code: 200, endpoint: created.body!.endpoint })
        const updated = yield* api(partner, "PUT", `${base}/${id}`, { endpoint: { status: "disabled" } })
        assert.strictEqual((updated.body!.endpoint as EndpointBody).status, "disabled", updated.text)
        const deleted = yield* api(partner, "DELETE", `${base}/${id}`)
        assert.strictEqual(deleted.status, 204)
        assert.deepStrictEqual((yield* api(partner, "GET", base)).body, { status_code: 200, endpoints: [] })
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

    it.effect("answers every webhook route without a 500, whatever the body or query", () =>
      Effect.gen(function* () {
        yield* createOwner("hostile-hooks")
        yield* provisionProvider("hostile-co", { owners: ["hostile-hooks"] })
        const partner = yield* webhookPartner({ owners: ["hostile-hooks"], provider: "hostile-co" })
        const ownerEndpoint = yield* createEndpoint(partner, ownerEndpoints("hostile-hooks"))
        const providerEndpoint = yield* createEndpoint(partner, providerEndpoints("hostile-co"))
        const ids = {
          owner: { id: ownerEndpoint.id, delivery: yield* insertDelivery(ownerEndpoint.id) },
          provider: { id: providerEndpoint.id, delivery: yield* insertDelivery(providerEndpoint.id) },
        }
        const routes = routesFor("partner-api", "development").filter((route) =>
          route.path.includes("/webhooks/"),
        )
        assert.strictEqual(routes.length, 16, "eight routes on the owner path, eight on the provider path")
        const deep = (depth: number): unknown => (depth === 0 ? "x" : { endpoint: [deep(depth - 1)] })
        const hostileValues: ReadonlyArray<unknown> = [
          null,
          0,
          "",
          true,
          [],
          {},
          { endpoint: null },
          { endpoint: "x" },
          { endpoint: { name: 5, destination_url: {}, events: [null, {}], status: 1 } },
          { endpoint: { name: long, destination_url: `https://${long}.example.com`, events: [long] } },
          { endpoint: { ...ENDPOINT, events: Array.from({ length: 5000 }, (_, i) => `e${i}`) } },
          { endpoint: { ...ENDPOINT, name: "a\u0000b", destination_url: "https://a.example/\u0000" } },
          { endpoint: { ...ENDPOINT, destination_url: "https://[::1" } },
          { endpoint: { ...ENDPOINT, destination_url: "javascript:alert(1)" } },
          { endpoint: { __proto__: { polluted: true }, constructor: { prototype: { polluted: true } } } },
          deep(2000),
        ]
        const bodies = [...hostileValues.map((value) => JSON.stringify(value)), "{", "nul", "\u0000", "[1,]"]
        const queries = [
          "",
          "?page=0",
          "?page=-1",
          "?page=1e3",
          "?per_page=1000",
          "?per_page=abc",
          "?status=x",
          `?page=${"9".repeat(400)}`,
          "?status=%00",
          "?page=1&page=2",
        ]
        // DELETE is left out: it takes no input beyond the path, and the endpoints must stay for the others.
        for (const route of routes.filter((r) => r.method !== "DELETE")) {
          const kind = route.path.includes("/providers/") ? "provider" : "owner"
          const path = route.path
            .replace(":owner_slug", "hostile-hooks")
            .replace(":provider", "hostile-co")
            .replace(":endpoint_id", String(ids[kind].id))
            .replace(":id", String(route.path.includes("deliveries") ? ids[kind].delivery : ids[kind].id))
          const sent =
            route.method === "GET"
              ? queries.map((q) => [`${path}${q}`, undefined] as const)
              : bodies.map((b) => [path, b] as const)
          for (const [target, body] of sent) {
            const answer = yield* api(partner, route.method, target, body)
            const what = `${route.method} ${target} ${(body ?? "").slice(0, 60)} -> ${answer.status} ${answer.text.slice(0, 200)}`
            assert.isBelow(answer.status, 500, what)
          }
        }
        assert.isUndefined((Object.prototype as Record<string, unknown>).polluted, "no prototype pollution")
        const still = yield* api(partner, "GET", `${ownerEndpoints("hostile-hooks")}/${ownerEndpoint.id}`)
        assert.strictEqual(still.status, 200, still.text)
      }),
    )
  })
})

describe("webhook destinations where private addresses are refused", () => {
  const production = authService({ env: authEnv({ WEBHOOK_ALLOW_PRIVATE_DESTINATIONS: "false" }) })
  layer(production.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("refuses loopback, private, link-local and localhost destinations", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("public-only")
        for (const url of [
          "https://127.0.0.1/h",
          "https://localhost/h",
          "https://api.localhost/h",
          "https://10.1.2.3/h",
          "https://192.168.0.10:8443/h",
          "https://169.254.169.254/latest/meta-data",
          "https://[::1]/h",
          "https://[fd00::1]/h",
          "https://[::ffff:127.0.0.1]/h",
          "https://0x7f.1/h",
        ]) {
          const answer = yield* api(partner, "POST", ownerEndpoints("public-only"), {
            endpoint: { ...ENDPOINT, destination_url: url },
          })
          assert.strictEqual(answer.status, 422, `${url}: ${answer.text}`)
          assert.deepStrictEqual(answer.body!.endpoint, {
            destination_url: "Destination url must be a publicly reachable host",
          })
        }
        const ok = yield* api(partner, "POST", ownerEndpoints("public-only"), {
          endpoint: { ...ENDPOINT, destination_url: "https://93.184.215.14/h" },
        })
        assert.strictEqual(ok.status, 200, ok.text)
      }),
    )
  })
})

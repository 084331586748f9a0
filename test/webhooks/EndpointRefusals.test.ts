import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { routesFor } from "../../backend/App.ts"
import { authEnv, authService, createOwner } from "../support/Auth.ts"
import {
  api,
  createEndpoint,
  ENDPOINT,
  type EndpointBody,
  insertDelivery,
  ownerEndpoints,
  ownerWithPartner,
  providerEndpoints,
  provisionProvider,
  webhookPartner,
  webhookService,
} from "../support/Webhooks.ts"
import { invalidBodies, invalidParams, long } from "../support/EndpointBodies.ts"

const service = webhookService()

describe("webhook endpoints: refusals", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
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
        assert.strictEqual(
          routes.length,
          26,
          "thirteen routes on the owner path, thirteen on the provider path",
        )
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
        const both = yield* api(partner, "POST", ownerEndpoints("public-only"), {
          endpoint: { ...ENDPOINT, name: " ", destination_url: "https://10.0.0.1/h" },
        })
        assert.deepStrictEqual(both.body!.endpoint, {
          name: "Name can't be blank",
          destination_url: "Destination url must be a publicly reachable host",
        })
        const ok = yield* api(partner, "POST", ownerEndpoints("public-only"), {
          endpoint: { ...ENDPOINT, destination_url: "https://93.184.215.14/h" },
        })
        assert.strictEqual(ok.status, 200, ok.text)
      }),
    )
  })
})

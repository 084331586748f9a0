import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createOwner, gatewayPort, httpRequest } from "../support/Auth.ts"
import { validateOpenApi } from "../support/OpenApi.ts"
import {
  assertInvalid,
  assertValid,
  compilePublished,
  type Json,
  publishedSpec,
  responseSchema,
} from "../support/PublishedApi.ts"
import {
  api,
  createEndpoint,
  ENDPOINT,
  insertDelivery,
  ownerEndpoints,
  ownerWithPartner,
  providerEndpoints,
  provisionProvider,
  webhookPartner,
  webhookService,
} from "../support/Webhooks.ts"

const compile = compilePublished

const ENDPOINTS = "/partners/{owner_slug}/webhooks/endpoints"
const ENDPOINT_ID = "/partners/{owner_slug}/webhooks/endpoints/{id}"
const DELIVERIES = "/partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/deliveries"
const DELIVERY = "/partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/deliveries/{id}"

/**
 * The published PUT 422 declares `endpoint.status` as one of the three statuses, yet its own example carries the
 * message 'Status is invalid' there: the schema contradicts the example (and the error shape of every other 422),
 * so that one enum is left out; everything else of the schema is checked.
 */
const put422 = () => {
  const schema = responseSchema(ENDPOINT_ID, "put", "422")
  const endpoint = (schema.properties as Json).endpoint as Json
  ;(endpoint.properties as Json).status = { type: "string" }
  return schema
}

/**
 * The published delivery schemas were derived from an example whose payload was `{"event", "data":
 * {"insurance_policy_id": 1}}`; real payloads are the spec's envelope (`data` holds one key named for the
 * subject). `strictPayload` keeps the published payload schema; the other accepts any payload object with `event`
 * and `data`, as the envelope has them.
 */
const relaxedPayload = (schema: Json, at: (schema: Json) => Json) => {
  const delivery = at(schema)
  ;(delivery.properties as Json).payload = {
    type: "object",
    required: ["data", "event"],
    properties: { data: { type: "object" }, event: { type: "string" } },
  }
  return schema
}

const listItem = (schema: Json) => ((schema.properties as Json).deliveries as Json).items as Json
const single = (schema: Json) => (schema.properties as Json).delivery as Json

const schemas = {
  post200: compile(responseSchema(ENDPOINTS, "post", "200")),
  post422: compile(responseSchema(ENDPOINTS, "post", "422")),
  list200: compile(responseSchema(ENDPOINTS, "get", "200")),
  put200: compile(responseSchema(ENDPOINT_ID, "put", "200")),
  put422: compile(put422()),
  deliveries200: compile(responseSchema(DELIVERIES, "get", "200")),
  deliveries200Envelope: compile(relaxedPayload(responseSchema(DELIVERIES, "get", "200"), listItem)),
  delivery200: compile(responseSchema(DELIVERY, "get", "200")),
  delivery200Envelope: compile(relaxedPayload(responseSchema(DELIVERY, "get", "200"), single)),
}

/** The payload of the published delivery examples. */
const PUBLISHED_PAYLOAD = { data: { insurance_policy_id: 1 }, event: "policy.created" }

const service = webhookService()

describe("webhook responses validate against the published partner API", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("endpoint create, list and update, and their 422s", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("published")
        const base = ownerEndpoints("published")
        const empty = yield* api(partner, "GET", base)
        assertValid(schemas.list200, empty.body, "GET list (empty)")

        const created = yield* api(partner, "POST", base, { endpoint: ENDPOINT })
        assert.strictEqual(created.status, 200, created.text)
        assertValid(schemas.post200, created.body, "POST 200")
        const id = (created.body!.endpoint as { id: number }).id

        const listed = yield* api(partner, "GET", base)
        assertValid(schemas.list200, listed.body, "GET list 200")

        const fetched = yield* api(partner, "GET", `${base}/${id}`)
        assertValid(schemas.post200, fetched.body, "GET one 200 (shaped like create)")

        const updated = yield* api(partner, "PUT", `${base}/${id}`, {
          endpoint: {
            destination_url: "https://new-url.example.com/hook",
            events: ["prospect.created"],
            status: "suspended",
          },
        })
        assert.strictEqual(updated.status, 200, updated.text)
        assertValid(schemas.put200, updated.body, "PUT 200")

        const http = yield* api(partner, "POST", base, {
          endpoint: { ...ENDPOINT, destination_url: "http://new-url.example.com/hook" },
        })
        assert.strictEqual(http.status, 422, http.text)
        assertValid(schemas.post422, http.body, "POST 422")

        const badUpdate = yield* api(partner, "PUT", `${base}/${id}`, {
          endpoint: { destination_url: "http://new-url.example.com/hook", status: "paused" },
        })
        assert.strictEqual(badUpdate.status, 422, badUpdate.text)
        assertValid(schemas.put422, badUpdate.body, "PUT 422")
        assertInvalid(
          compile(responseSchema(ENDPOINT_ID, "put", "422")),
          badUpdate.body,
          "the published PUT 422 schema as is, whose status enum refuses its own example's message",
        )
      }),
    )

    it.effect("provider endpoints have the same shapes", () =>
      Effect.gen(function* () {
        yield* createOwner("published-covered")
        yield* provisionProvider("published-co", { owners: ["published-covered"] })
        const partner = yield* webhookPartner({ provider: "published-co" })
        const base = providerEndpoints("published-co")
        const created = yield* api(partner, "POST", base, { endpoint: ENDPOINT })
        assertValid(schemas.post200, created.body, "provider POST 200")
        assertValid(schemas.list200, (yield* api(partner, "GET", base)).body, "provider GET list 200")
      }),
    )

    it.effect("delivery list and delivery, with the published example payload and with a real envelope", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("published-deliveries")
        const endpoint = yield* createEndpoint(partner, ownerEndpoints("published-deliveries"))
        const base = `${ownerEndpoints("published-deliveries")}/${endpoint.id}/deliveries`
        const example = yield* insertDelivery(endpoint.id, { payload: PUBLISHED_PAYLOAD })
        const envelope = yield* insertDelivery(endpoint.id, {
          status: "failed",
          attempt_number: 25,
          last_attempt_failure_reason: "HTTP 500",
        })

        const page = yield* api(partner, "GET", `${base}?page=2&per_page=1`)
        assert.strictEqual(page.status, 200, page.text)
        assertValid(schemas.deliveries200, page.body, "GET deliveries 200 (published payload)")
        const all = yield* api(partner, "GET", base)
        assertValid(schemas.deliveries200Envelope, all.body, "GET deliveries 200 (envelope)")
        assertInvalid(schemas.deliveries200, all.body, "an envelope against the example-derived payload")

        const one = yield* api(partner, "GET", `${base}/${example}`)
        assertValid(schemas.delivery200, one.body, "GET delivery 200 (published payload)")
        const real = yield* api(partner, "GET", `${base}/${envelope}`)
        assertValid(schemas.delivery200Envelope, real.body, "GET delivery 200 (envelope)")
      }),
    )

    it.effect("our own reference lists every webhook route under the Webhooks tag", () =>
      Effect.gen(function* () {
        const answer = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
        const document = JSON.parse(answer.text) as Json
        const result = yield* validateOpenApi(document)
        assert.isTrue(result.valid, result.errors)
        const operations = Object.entries(document.paths as Record<string, Record<string, Json>>)
          .filter(([path]) => path.includes("/webhooks/"))
          .flatMap(([path, methods]) =>
            Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
          )
        assert.deepStrictEqual(operations.map(({ method, path }) => `${method} ${path}`).sort(), [
          "delete /partners/providers/{provider}/webhooks/endpoints/{id}",
          "delete /partners/providers/{provider}/webhooks/portal_sessions",
          "delete /partners/{owner_slug}/webhooks/endpoints/{id}",
          "delete /partners/{owner_slug}/webhooks/portal_sessions",
          "get /partners/providers/{provider}/webhooks/endpoints",
          "get /partners/providers/{provider}/webhooks/endpoints/{endpoint_id}/deliveries",
          "get /partners/providers/{provider}/webhooks/endpoints/{endpoint_id}/deliveries/{id}",
          "get /partners/providers/{provider}/webhooks/endpoints/{endpoint_id}/replays/{id}",
          "get /partners/providers/{provider}/webhooks/endpoints/{id}",
          "get /partners/{owner_slug}/webhooks/endpoints",
          "get /partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/deliveries",
          "get /partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/deliveries/{id}",
          "get /partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/replays/{id}",
          "get /partners/{owner_slug}/webhooks/endpoints/{id}",
          "post /partners/providers/{provider}/webhooks/endpoints",
          "post /partners/providers/{provider}/webhooks/endpoints/{endpoint_id}/deliveries/{id}/retry",
          "post /partners/providers/{provider}/webhooks/endpoints/{endpoint_id}/replay",
          "post /partners/providers/{provider}/webhooks/endpoints/{endpoint_id}/replays/{id}/cancel",
          "post /partners/providers/{provider}/webhooks/portal_sessions",
          "post /partners/{owner_slug}/webhooks/endpoints",
          "post /partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/deliveries/{id}/retry",
          "post /partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/replay",
          "post /partners/{owner_slug}/webhooks/endpoints/{endpoint_id}/replays/{id}/cancel",
          "post /partners/{owner_slug}/webhooks/portal_sessions",
          "put /partners/providers/{provider}/webhooks/endpoints/{id}",
          "put /partners/{owner_slug}/webhooks/endpoints/{id}",
        ])
        for (const { operation } of operations) {
          assert.deepStrictEqual(operation.tags, ["Webhooks"])
          assert.deepStrictEqual(operation.security, [{ oauth2: ["webhooks:manage"] }])
        }
        // Every path the published API has for webhooks is served.
        for (const path of Object.keys(publishedSpec.paths as Json).filter((p) => p.includes("/webhooks/"))) {
          for (const method of Object.keys((publishedSpec.paths as Record<string, Json>)[path]!)) {
            assert.isDefined(
              (document.paths as Record<string, Json | undefined>)[path]?.[method],
              `${method} ${path}`,
            )
          }
        }
      }),
    )

    it.effect("validation can fail: mutated bodies are refused", () =>
      Effect.gen(function* () {
        const partner = yield* ownerWithPartner("published-sanity")
        const endpoint = yield* createEndpoint(partner, ownerEndpoints("published-sanity"))
        const body = { status_code: 200, endpoint }
        assertValid(schemas.post200, body, "the unchanged body")
        assertInvalid(
          schemas.post200,
          { ...body, endpoint: { ...endpoint, id: String(endpoint.id) } },
          "id as string",
        )
        assertInvalid(
          schemas.post200,
          { ...body, endpoint: { ...endpoint, status: "paused" } },
          "unknown status",
        )
        const { suspension_reason: _, ...withoutReason } = endpoint
        assertInvalid(schemas.post200, { ...body, endpoint: withoutReason }, "no suspension_reason")
        assertInvalid(
          schemas.post422,
          { status_code: 422, error: "x", endpoint: {} },
          "422 without destination_url",
        )

        const id = yield* insertDelivery(endpoint.id, { payload: PUBLISHED_PAYLOAD })
        const shown = yield* api(
          partner,
          "GET",
          `${ownerEndpoints("published-sanity")}/${endpoint.id}/deliveries/${id}`,
        )
        const delivery = shown.body!.delivery as Json
        assertValid(schemas.delivery200, shown.body, "the unchanged delivery")
        assertInvalid(
          schemas.delivery200,
          { ...shown.body, delivery: { ...delivery, status: "lost" } },
          "an unpublished delivery status",
        )
        assertInvalid(
          schemas.delivery200,
          { ...shown.body, delivery: { ...delivery, next_retry_at: 5 } },
          "a timestamp that is a number",
        )
      }),
    )
  })
})

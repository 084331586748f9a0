import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, References, Schema } from "effect"
import { appLayer, routesFor } from "../../backend/App.ts"
import { Scopes } from "../../backend/auth/Scopes.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { json, ListeningPorts, type Route } from "../../backend/platform/Http.ts"
import { openApiDocument, type OpenApiOptions, openApiPath } from "../../backend/platform/OpenApi.ts"
import { EventCatalog, EventNames } from "../../backend/events/Catalog.ts"
import { at, resolveRef, validateOpenApi } from "../support/OpenApi.ts"
import { isolatedEnv, isolationLayer } from "../support/TestPlatform.ts"

type Json = Record<string, unknown>

const BASE_URL = "https://partners.example.test"
const NOT_FOUND = `{"status_code":404,"error":"Not found."}`

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const request = (port: number, path: string, headers: Record<string, string> = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const portOf = (role: "partner-api" | "ingest-api") =>
  Effect.map(Effect.service(ListeningPorts), (ports) => ports.get(role)!)

const partnerApi = (path: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(portOf("partner-api"), (port) => request(port, path, headers))

const fetchDocument = Effect.map(partnerApi("/openapi.json"), (answer) => JSON.parse(answer.text) as Json)

const operations = (document: Json) =>
  Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
  )

const service = Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer)).pipe(
  Layer.provideMerge(
    isolationLayer(
      isolatedEnv({
        ROLES: "partner-api,ingest-api",
        PARTNER_API_PORT: "0",
        INGEST_API_PORT: "0",
        PUBLIC_BASE_URL: BASE_URL,
      }),
    ),
  ),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

describe("the partner gateway's reference", () => {
  layer(service, { excludeTestServices: true })((it) => {
    it.effect("serves /openapi.json without a token as a valid OpenAPI 3.1 document", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/openapi.json")
        assert.strictEqual(answer.status, 200)
        assert.match(answer.headers.get("content-type") ?? "", /^application\/json/)
        const document = JSON.parse(answer.text) as Json
        assert.strictEqual(document.openapi, "3.1.0")
        assert.deepStrictEqual(document.servers, [{ url: BASE_URL }])
        const result = yield* validateOpenApi(document)
        assert.isTrue(result.valid, result.errors)
        assert.strictEqual(result.version, "3.1")
      }),
    )

    it.effect("lists every outbound event under webhooks with its envelope and data key", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const webhooks = document.webhooks as Record<string, { post: Json }>
        assert.deepStrictEqual(Object.keys(webhooks), [...EventNames])
        for (const name of EventNames) {
          const post = webhooks[name]!.post
          const envelope = at(document, post, "requestBody", "content", "application/json", "schema")
          assert.deepStrictEqual(Object.keys(envelope.properties as Json), [
            "event",
            "property_owner_slug",
            "data",
          ])
          assert.sameMembers(envelope.required as Array<string>, ["event", "property_owner_slug", "data"])
          assert.deepStrictEqual(at(document, envelope, "properties", "event").enum, [name])
          const data = at(document, envelope, "properties", "data")
          assert.deepStrictEqual(Object.keys(data.properties as Json), [EventCatalog[name].dataKey], name)
          const headers = (post.parameters as Array<unknown>).map((p) => resolveRef(document, p))
          assert.deepStrictEqual(
            headers.map((h) => [h.name, h.in, h.required]),
            ["X-Webhook-Event", "X-Webhook-Delivery", "X-Webhook-Timestamp", "X-Webhook-Signature"].map(
              (h) => [h, "header", true],
            ),
          )
        }
        const signature = resolveRef(document, { $ref: "#/components/parameters/X-Webhook-Signature" })
        assert.match(String(signature.description), /HMAC-SHA256/)
        assert.match(String(signature.description), /<timestamp>\.<raw_request_body>/)
      }),
    )

    it.effect("offers the OAuth2 client-credentials scheme with every scope and the token URL", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const scheme = at(document, document, "components", "securitySchemes", "oauth2")
        assert.strictEqual(scheme.type, "oauth2")
        assert.match(String(scheme.description), /audience/)
        const flow = at(document, scheme, "flows", "clientCredentials")
        assert.strictEqual(flow.tokenUrl, `${BASE_URL}/token`)
        assert.deepStrictEqual(flow.scopes, { ...Scopes })
      }),
    )

    it.effect("documents each documented partner route once, guarded ones with exactly their scope", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const documented = routesFor("partner-api", "development").filter((route) => route.doc !== undefined)
        assert.strictEqual(operations(document).length, documented.length)
        for (const route of documented) {
          const operation = (document.paths as Record<string, Record<string, Json>>)[
            openApiPath(route.path)
          ]?.[route.method.toLowerCase()]
          assert.isDefined(operation, `${route.method} ${route.path}`)
          assert.strictEqual(operation!.summary, route.doc!.summary)
          if (route.access === "public") {
            assert.deepStrictEqual(operation!.security, [])
          } else {
            assert.deepStrictEqual(operation!.security, [{ oauth2: [route.access.scope] }])
            const responses = operation!.responses as Json
            assert.deepStrictEqual(responses["401"], { $ref: "#/components/responses/Unauthorized" })
            assert.deepStrictEqual(responses["403"], { $ref: "#/components/responses/Forbidden" })
          }
        }
        assert.isDefined((document.paths as Json)["/token"], "POST /token is documented")
      }),
    )

    it.effect("writes paths with {param} and declares every path parameter as a required string", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        for (const { path, operation } of operations(document)) {
          assert.notInclude(path, ":", path)
          const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])
          const declared = ((operation.parameters ?? []) as Array<Json>).filter((p) => p.in === "path")
          assert.deepStrictEqual(
            declared.map((p) => [p.name, p.required, p.schema]),
            names.map((name) => [name, true, { type: "string" }]),
            path,
          )
        }
      }),
    )

    it.effect("answers the same document every time and 304 to a matching If-None-Match", () =>
      Effect.gen(function* () {
        const first = yield* partnerApi("/openapi.json")
        const second = yield* partnerApi("/openapi.json")
        assert.strictEqual(first.text, second.text)
        const etag = first.headers.get("etag")
        assert.isNotNull(etag)
        const again = yield* partnerApi("/openapi.json", { "if-none-match": etag! })
        assert.strictEqual(again.status, 304)
        assert.strictEqual(again.text, "")
      }),
    )

    it.effect("serves /docs without a token, loading only this origin's files under a strict CSP", () =>
      Effect.gen(function* () {
        const page = yield* partnerApi("/docs")
        assert.strictEqual(page.status, 200)
        assert.match(page.headers.get("content-type") ?? "", /^text\/html/)
        const csp = page.headers.get("content-security-policy") ?? ""
        for (const directive of [
          "script-src 'self'",
          "style-src 'self'",
          "connect-src 'self'",
          "default-src 'none'",
        ])
          assert.include(csp, directive)
        assert.include(page.text, 'data-url="/openapi.json"')
        // The token request's audience, for the Authorize dialog: an identifier, not something fetched.
        assert.include(page.text, `data-audience="${BASE_URL}"`)
        const links = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) =>
          m[1]!.replaceAll("&amp;", "&"),
        )
        assert.isAtLeast(links.length, 3)
        for (const link of links) assert.notMatch(link, /^(https?:)?\/\//, `${link} is on this origin`)
        const types: Record<string, RegExp> = {
          js: /^text\/javascript/,
          css: /^text\/css/,
          png: /^image\/png/,
        }
        for (const link of links) {
          const asset = yield* partnerApi(link)
          assert.strictEqual(asset.status, 200, link)
          const extension = new URL(link, BASE_URL).pathname.split(".").pop()!
          assert.match(asset.headers.get("content-type") ?? "", types[extension]!, link)
          assert.include(asset.headers.get("cache-control") ?? "", "immutable", link)
          const cached = yield* partnerApi(link, { "if-none-match": asset.headers.get("etag")! })
          assert.strictEqual(cached.status, 304, link)
        }
        assert.isTrue(links.some((link) => link.includes("swagger-ui-bundle.js")))
      }),
    )

    it.effect("answers 404 for /openapi.json and /docs on the ingestion gateway", () =>
      Effect.gen(function* () {
        const port = yield* portOf("ingest-api")
        for (const path of ["/openapi.json", "/docs", "/docs/assets/swagger-ui-bundle.js"]) {
          const answer = yield* request(port, path)
          assert.strictEqual(answer.status, 404, path)
          assert.strictEqual(answer.text, NOT_FOUND, path)
        }
      }),
    )
  })
})

const SessionRequest = Schema.Struct({ name: Schema.String }).annotate({ identifier: "SessionRequest" })
const Session = Schema.Struct({ token: Schema.String }).annotate({ identifier: "Session" })
const UnitItem = Schema.Struct({
  external_system_id: Schema.String,
  property_external_id: Schema.String,
  name: Schema.optionalKey(Schema.String),
}).annotate({ identifier: "UnitItem" })
const BatchResponse = Schema.Struct({
  status_code: Schema.Int,
  results: Schema.Array(Schema.Struct({ external_system_id: Schema.String })),
}).annotate({ identifier: "BatchResponse" })
const Prospect = Schema.Struct({ status: Schema.Literals(["incomplete", "ready"]) }).annotate({
  identifier: "Prospect",
})

const ok = () => Effect.succeed(json(200, {}))

const syntheticRoutes: ReadonlyArray<Route> = [
  {
    method: "POST",
    path: "/sessions",
    access: "public",
    doc: {
      summary: "Open a session",
      tag: "Sessions",
      body: SessionRequest,
      responses: [{ status: 200, description: "A session", schema: Session }],
    },
    handle: ok,
  },
  {
    method: "POST",
    path: "/partners/:owner_slug/units",
    access: { scope: "units:write" },
    doc: {
      summary: "Create or update units",
      description: "Upsert on `external_system_id` within the property.",
      tag: "Units",
      body: Schema.Array(UnitItem),
      responses: [
        { status: 422, description: "Invalid batch" },
        { status: 200, description: "One result per item", schema: BatchResponse },
        { status: 404, description: "Unknown owner" },
      ],
    },
    handle: ok,
  },
  {
    method: "GET",
    path: "/partners/:owner_slug/prospects/:source/:source_prospect_id",
    access: { scope: "prospects:read" },
    doc: {
      summary: "Get a prospect",
      tag: "Prospects",
      responses: [{ status: 200, description: "The prospect", schema: Prospect }],
    },
    handle: ok,
  },
  { method: "GET", path: "/internal/undocumented", access: "public", handle: ok },
]

const Delivered = Schema.Struct({ event: Schema.Literal("thing.happened") }).annotate({
  identifier: "ThingHappened",
})

const syntheticOptions: OpenApiOptions = {
  title: "Synthetic",
  version: "1",
  description: "Routes made up for the test.",
  serverUrl: "https://api.example.test",
  routes: syntheticRoutes,
  security: { description: "Client credentials; `audience` in the body.", scopes: { ...Scopes } },
  webhooks: {
    headers: { "X-Webhook-Event": Schema.String.annotate({ description: "The event name." }) },
    events: [
      { name: "thing.happened", summary: "A thing happens.", description: "When it does.", body: Delivered },
    ],
    answers: { delivered: "Taken.", notDelivered: "Sent again." },
  },
}

describe("openApiDocument", () => {
  const document = openApiDocument(syntheticOptions) as Json
  const paths = document.paths as Record<string, Record<string, Json>>
  const units = paths["/partners/{owner_slug}/units"]!.post!

  it.effect("is a valid OpenAPI 3.1 document", () =>
    Effect.gen(function* () {
      const result = yield* validateOpenApi(document)
      assert.isTrue(result.valid, result.errors)
    }),
  )

  it("documents only routes that have a doc, under OpenAPI paths in a fixed order", () => {
    assert.deepStrictEqual(Object.keys(paths), [
      "/partners/{owner_slug}/prospects/{source}/{source_prospect_id}",
      "/partners/{owner_slug}/units",
      "/sessions",
    ])
    assert.deepStrictEqual(
      (document.tags as Array<Json>).map((tag) => tag.name),
      ["Prospects", "Sessions", "Units"],
    )
  })

  it("declares each path parameter as a required string", () => {
    const prospect = paths["/partners/{owner_slug}/prospects/{source}/{source_prospect_id}"]!.get!
    assert.deepStrictEqual(prospect.parameters, [
      { name: "owner_slug", in: "path", required: true, schema: { type: "string" } },
      { name: "source", in: "path", required: true, schema: { type: "string" } },
      { name: "source_prospect_id", in: "path", required: true, schema: { type: "string" } },
    ])
  })

  it("takes the request and response bodies from the route's schemas, as shared components", () => {
    assert.deepStrictEqual(units.requestBody, {
      required: true,
      content: {
        "application/json": { schema: { type: "array", items: { $ref: "#/components/schemas/UnitItem" } } },
      },
    })
    const item = at(document, document, "components", "schemas", "UnitItem")
    assert.deepStrictEqual(item.required, ["external_system_id", "property_external_id"])
    assert.deepStrictEqual(
      at(document, units, "responses", "200", "content", "application/json", "schema"),
      at(document, document, "components", "schemas", "BatchResponse"),
    )
    assert.strictEqual(units.summary, "Create or update units")
    assert.strictEqual(units.description, "Upsert on `external_system_id` within the property.")
    assert.deepStrictEqual(units.tags, ["Units"])
  })

  it("guards a scoped route with exactly its scope and the gateway's 401 and 403 bodies", () => {
    assert.deepStrictEqual(units.security, [{ oauth2: ["units:write"] }])
    const responses = units.responses as Json
    assert.deepStrictEqual(Object.keys(responses), ["200", "401", "403", "404", "422"])
    assert.deepStrictEqual(responses["401"], { $ref: "#/components/responses/Unauthorized" })
    assert.deepStrictEqual(responses["403"], { $ref: "#/components/responses/Forbidden" })
    const unauthorized = at(document, responses["401"], "content", "application/json", "schema")
    assert.deepStrictEqual(at(document, unauthorized, "properties", "message").enum, ["Unauthorized"])
    assert.deepStrictEqual(unauthorized.required, ["message"])
    const forbidden = at(document, responses["403"], "content", "application/json", "schema")
    assert.deepStrictEqual(at(document, forbidden, "properties", "message").enum, ["Forbidden"])
  })

  it("gives declared 404 and 422 responses the endpoint error shape", () => {
    for (const status of ["404", "422"]) {
      const response = at(document, units, "responses", status)
      const schema = at(document, response, "content", "application/json", "schema")
      assert.deepStrictEqual(Object.keys(schema.properties as Json), ["status_code", "error"], status)
      assert.deepStrictEqual(schema.required, ["status_code", "error"], status)
    }
  })

  it("leaves a public route without security requirement or gateway errors", () => {
    const sessions = paths["/sessions"]!.post!
    assert.deepStrictEqual(sessions.security, [])
    assert.deepStrictEqual(Object.keys(sessions.responses as Json), ["200"])
    assert.isUndefined(sessions.parameters)
  })

  it("describes the OAuth2 client-credentials scheme at the server's /token", () => {
    const scheme = at(document, document, "components", "securitySchemes", "oauth2")
    assert.deepStrictEqual(scheme.flows, {
      clientCredentials: { tokenUrl: "https://api.example.test/token", scopes: { ...Scopes } },
    })
    assert.strictEqual(scheme.description, "Client credentials; `audience` in the body.")
  })

  it("documents each webhook as a POST of its body with the delivery headers", () => {
    const post = at(document, document, "webhooks", "thing.happened", "post")
    assert.deepStrictEqual(
      at(document, post, "requestBody", "content", "application/json", "schema"),
      at(document, document, "components", "schemas", "ThingHappened"),
    )
    assert.deepStrictEqual(resolveRef(document, (post.parameters as Array<unknown>)[0]), {
      name: "X-Webhook-Event",
      in: "header",
      required: true,
      description: "The event name.",
      schema: { type: "string" },
    })
  })

  it("describes a webhook's answers with the text the options give", () => {
    const post = at(document, document, "webhooks", "thing.happened", "post")
    assert.deepStrictEqual(post.responses, {
      "2XX": { description: "Taken." },
      default: { description: "Sent again." },
    })
  })

  it("comes out the same whatever the order of the routes", () => {
    const reversed = openApiDocument({ ...syntheticOptions, routes: [...syntheticRoutes].reverse() })
    assert.strictEqual(JSON.stringify(reversed), JSON.stringify(document))
    assert.deepStrictEqual(Object.keys(document.components as Json), [
      "schemas",
      "responses",
      "parameters",
      "securitySchemes",
    ])
    const names = Object.keys((document.components as { schemas: Json }).schemas)
    assert.deepStrictEqual(names, [...names].sort())
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { audienceOf, authEnv, authService, gatewayPort, httpRequest } from "../support/Auth.ts"
import { headingOf } from "../support/Enrollment.ts"
import {
  envelope,
  ingestClient,
  PROSPECT_UPDATE_MAPPING,
  prospectUpdate,
  setMapping,
  sourceMessages,
} from "../support/Ingest.ts"
import { consolePort, createOperator, signIn } from "../support/Operator.ts"
import {
  ENROLLMENT_HOST,
  issueSource,
  PROPERTY,
  prospectPartner,
  provisionedOwner,
} from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"

const service = authService({
  env: authEnv({
    ROLES: "partner-api,ingest-api,enrollment,console",
    ENROLLMENT_PORT: "0",
    CONSOLE_PORT: "0",
    ENROLLMENT_HOST,
  }),
})

const NOT_UTF8 = { status_code: 400, error: "Request body is not valid UTF-8." }
const NOT_JSON_TYPE = {
  status_code: 415,
  error: "Request body must be JSON, sent with Content-Type: application/json.",
}

/** `text` as bytes, one per character: `\xff` becomes the byte 0xFF, which UTF-8 never holds. */
const bytesOf = (text: string) => new Uint8Array(Buffer.from(text, "latin1"))

/** The bodies of a partner's property batch: invalid UTF-8, and valid JSON under each type but JSON's. */
const propertyBatch = (id: string) =>
  JSON.stringify([{ ...PROPERTY, external_system_id: id, building_name: id, pms_property_id: id }])

const propertiesStored = (prefix: string) =>
  Effect.map(
    query(
      (sql) =>
        sql<
          Array<{ n: number }>
        >`select count(*)::int as n from properties where external_system_id like ${`${prefix}%`}`,
    ),
    (rows) => rows[0]!.n,
  )

/** An admin of the console, signed in: the headers its writes carry. */
const adminHeaders = (email: string) =>
  Effect.map(
    Effect.flatMap(createOperator(email, "admin"), () => signIn(email)),
    (session) => ({ cookie: session.cookie, "x-csrf-token": session.csrf }),
  )

const operatorsStored = (prefix: string) =>
  Effect.map(
    query(
      (sql) =>
        sql<Array<{ n: number }>>`select count(*)::int as n from operators where email like ${`${prefix}%`}`,
    ),
    (rows) => rows[0]!.n,
  )

describe("request bodies: UTF-8 and JSON Content-Type (hygiene)", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers a Partner API body that is not UTF-8 with 400, storing nothing", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        const slug = yield* provisionedOwner(partner, "org-utf8")
        const answer = yield* httpRequest(yield* gatewayPort("partner-api"), `/partners/${slug}/properties`, {
          method: "POST",
          headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
          body: bytesOf(propertyBatch("utf8-\xff")),
        })
        assert.strictEqual(answer.status, 400, answer.text)
        assert.deepStrictEqual(JSON.parse(answer.text), NOT_UTF8)
        assert.strictEqual(yield* propertiesStored("utf8-"), 0)
      }),
    )

    it.effect("answers an inbound event that is not UTF-8 with 400, publishing nothing", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        yield* issueSource({ code: "utf8-src", clients: [partner.clientId] })
        const slug = yield* provisionedOwner(partner, "org-utf8-events")
        const client = yield* ingestClient("utf8-src", [slug])
        yield* setMapping("utf8-src", PROSPECT_UPDATE_MAPPING)
        const event = JSON.stringify(envelope("utf8-src", prospectUpdate("p-\xff", "2026-01-10T12:00:00Z")))
        const answer = yield* httpRequest(yield* gatewayPort("ingest-api"), "/events", {
          method: "POST",
          headers: { authorization: `Bearer ${client.token}`, "content-type": "application/json" },
          body: bytesOf(event),
        })
        assert.strictEqual(answer.status, 400, answer.text)
        assert.deepStrictEqual(JSON.parse(answer.text), NOT_UTF8)
        assert.lengthOf(yield* sourceMessages("utf8-src"), 0)
      }),
    )

    it.effect(
      "answers a /token body that is not UTF-8, raw or percent-encoded, with 400 invalid_request",
      () =>
        Effect.gen(function* () {
          const port = yield* gatewayPort("partner-api")
          const audience = yield* audienceOf("partner")
          const form = "application/x-www-form-urlencoded"
          const bodies = [
            [
              "application/json",
              bytesOf(
                JSON.stringify({
                  grant_type: "client_credentials",
                  client_id: "cli_\xff",
                  client_secret: "s",
                  audience,
                }),
              ),
            ],
            [
              form,
              bytesOf(
                `grant_type=client_credentials&client_id=cli_\xff&client_secret=s&audience=${audience}`,
              ),
            ],
            [
              form,
              bytesOf(`grant_type=client_credentials&client_id=cli_%FF&client_secret=s&audience=${audience}`),
            ],
          ] as const
          for (const [type, body] of bodies) {
            const answer = yield* httpRequest(port, "/token", {
              method: "POST",
              headers: { "content-type": type },
              body,
            })
            assert.strictEqual(answer.status, 400, answer.text)
            assert.deepStrictEqual(JSON.parse(answer.text), {
              error: "invalid_request",
              error_description: "Request body is not valid UTF-8.",
            })
          }
        }),
    )

    it.effect("answers a renter's form that is not UTF-8, raw or percent-encoded, with its 400 page", () =>
      Effect.gen(function* () {
        const port = yield* gatewayPort("enrollment")
        for (const phone of ["\xff", "%FF", "%C3"]) {
          const page = yield* httpRequest(port, "/enrollment/embedded/owner/src/p-1?email=a%40b.c", {
            method: "POST",
            redirect: "manual",
            headers: { "content-type": "application/x-www-form-urlencoded", origin: ENROLLMENT_HOST },
            body: bytesOf(`step=details&csrf_token=x&phone=${phone}`),
          })
          assert.strictEqual(page.status, 400, `${phone}: ${page.text.slice(0, 200)}`)
          assert.strictEqual(headingOf(page), "Your answers could not be read", phone)
        }
      }),
    )

    it.effect("answers a console body that is not UTF-8 with 400, creating no operator", () =>
      Effect.gen(function* () {
        const headers = yield* adminHeaders("utf8-admin@example.com")
        const answer = yield* httpRequest(yield* consolePort, "/api/operators", {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: bytesOf(JSON.stringify({ email: "utf8-\xff@example.com", role: "viewer" })),
        })
        assert.strictEqual(answer.status, 400, answer.text)
        assert.deepStrictEqual(JSON.parse(answer.text), NOT_UTF8)
        assert.strictEqual(yield* operatorsStored("utf8-\ufffd"), 0)
      }),
    )

    it.effect(
      "answers a Partner API body sent without a JSON Content-Type with 415, and takes JSON with parameters or a +json type",
      () =>
        Effect.gen(function* () {
          const partner = yield* prospectPartner()
          const slug = yield* provisionedOwner(partner, "org-json-type")
          const port = yield* gatewayPort("partner-api")
          const send = (id: string, type: string | undefined) =>
            httpRequest(port, `/partners/${slug}/properties`, {
              method: "POST",
              headers: {
                authorization: `Bearer ${partner.token}`,
                ...(type === undefined ? {} : { "content-type": type }),
              },
              // Bytes, so fetch adds no Content-Type of its own.
              body: bytesOf(propertyBatch(id)),
            })
          for (const type of [
            undefined,
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/jsonx",
          ]) {
            const answer = yield* send("type-refused", type)
            assert.strictEqual(answer.status, 415, `${type}: ${answer.text}`)
            assert.deepStrictEqual(JSON.parse(answer.text), NOT_JSON_TYPE)
          }
          assert.strictEqual(yield* propertiesStored("type-refused"), 0)
          for (const [id, type] of [
            ["type-charset", "application/json; charset=utf-8"],
            ["type-plus", "Application/Vnd.Partner+JSON"],
          ] as const) {
            const answer = yield* send(id, type)
            assert.strictEqual(answer.status, 200, `${type}: ${answer.text}`)
            assert.strictEqual(JSON.parse(answer.text).results[0].action, "created", answer.text)
          }
          assert.strictEqual(yield* propertiesStored("type-"), 2)
        }),
    )

    it.effect("answers an inbound event sent without a JSON Content-Type with 415, publishing nothing", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        yield* issueSource({ code: "type-src", clients: [partner.clientId] })
        const slug = yield* provisionedOwner(partner, "org-type-events")
        const client = yield* ingestClient("type-src", [slug])
        yield* setMapping("type-src", PROSPECT_UPDATE_MAPPING)
        const answer = yield* httpRequest(yield* gatewayPort("ingest-api"), "/events", {
          method: "POST",
          headers: { authorization: `Bearer ${client.token}`, "content-type": "text/plain" },
          body: JSON.stringify(envelope("type-src", prospectUpdate("p-1", "2026-01-10T12:00:00Z"))),
        })
        assert.strictEqual(answer.status, 415, answer.text)
        assert.deepStrictEqual(JSON.parse(answer.text), NOT_JSON_TYPE)
        assert.lengthOf(yield* sourceMessages("type-src"), 0)
      }),
    )

    it.effect("answers a console body sent without a JSON Content-Type with 415, creating no operator", () =>
      Effect.gen(function* () {
        const headers = yield* adminHeaders("type-admin@example.com")
        const answer = yield* httpRequest(yield* consolePort, "/api/operators", {
          method: "POST",
          headers,
          body: JSON.stringify({ email: "type-viewer@example.com", role: "viewer" }),
        })
        assert.strictEqual(answer.status, 415, answer.text)
        assert.deepStrictEqual(JSON.parse(answer.text), NOT_JSON_TYPE)
        assert.strictEqual(yield* operatorsStored("type-viewer"), 0)
        // A request without a body needs no Content-Type.
        const signOut = yield* httpRequest(yield* consolePort, "/api/session", { method: "DELETE", headers })
        assert.isBelow(signOut.status, 300, signOut.text)
      }),
    )

    it.effect("answers a /token body sent as neither a form nor JSON with 415 in OAuth's shape", () =>
      Effect.gen(function* () {
        const audience = yield* audienceOf("partner")
        const answer = yield* httpRequest(yield* gatewayPort("partner-api"), "/token", {
          method: "POST",
          headers: { "content-type": "text/plain" },
          body: JSON.stringify({
            grant_type: "client_credentials",
            client_id: "cli_x",
            client_secret: "s",
            audience,
          }),
        })
        assert.strictEqual(answer.status, 415, answer.text)
        assert.deepStrictEqual(JSON.parse(answer.text), {
          error: "invalid_request",
          error_description:
            "The body must be a form (application/x-www-form-urlencoded) or JSON (application/json).",
        })
      }),
    )
  })
})

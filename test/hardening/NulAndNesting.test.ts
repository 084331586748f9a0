import { randomBytes } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { envelope, ingestSetUp, postEvent, prospectUpdate } from "../support/Ingest.ts"
import { audienceOf, createClient, gatewayPort, httpRequest, requestToken } from "../support/Auth.ts"
import { prospectService, prospectPartner } from "../support/Prospects.ts"
import { createOwnerThroughApi } from "../support/Roster.ts"

const service = prospectService()

/** A JSON document nested `depth` levels deep as text (building it as a value and stringifying would recurse). */
const nested = (depth: number, inner = '"x"') => `${'{"a":['.repeat(depth)}${inner}${"]}".repeat(depth)}`

const INVALID_REQUEST = "invalid_request"

describe("NUL characters and deep nesting", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "answers a NUL or an impossible client_id at /token with 400, as a form, JSON or Basic credentials",
      () =>
        Effect.gen(function* () {
          const port = yield* gatewayPort("partner-api")
          const client = yield* createClient({ gateway: "partner" })
          const audience = yield* audienceOf("partner")
          const fields = { grant_type: "client_credentials", client_secret: client.clientSecret, audience }
          const answers = [
            yield* requestToken(port, { ...fields, client_id: "abc\u0000def" }, { encoding: "form" }),
            yield* requestToken(port, { ...fields, client_id: "abc\u0000def" }),
            yield* requestToken(
              port,
              { ...fields, client_id: randomBytes(4500).toString("hex") },
              { encoding: "form" },
            ),
            yield* httpRequest(port, "/token", {
              method: "POST",
              headers: {
                "content-type": "application/x-www-form-urlencoded",
                authorization: `Basic ${Buffer.from(`abc%00def:${client.clientSecret}`).toString("base64")}`,
              },
              body: new URLSearchParams({ grant_type: "client_credentials", audience }).toString(),
            }),
          ]
          for (const answer of answers) {
            assert.strictEqual(answer.status, 400, answer.text)
            assert.strictEqual(JSON.parse(answer.text).error, INVALID_REQUEST)
          }
          // The client itself is not locked out by them.
          const ok = yield* requestToken(
            port,
            { ...fields, client_id: client.clientId },
            { encoding: "form" },
          )
          assert.strictEqual(ok.status, 200, ok.text)
        }),
    )

    it.effect(
      "answers a control character in a path segment with 404 and in a query parameter with 400",
      () =>
        Effect.gen(function* () {
          const partner = yield* prospectPartner()
          const slug = yield* createOwnerThroughApi(partner, {
            external_org_id: "org-nul",
            name: "Nul Owner",
          })
          const port = yield* gatewayPort("partner-api")
          const auth = { authorization: `Bearer ${partner.token}`, "content-type": "application/json" }
          const paths = [
            ["GET", `/partners/owner-b%00/prospects/src/p-1`],
            ["POST", `/partners/owner-b%00/properties`],
            ["GET", `/partners/${slug}/prospects/src%00/p-1`],
            ["GET", `/partners/${slug}/webhooks/endpoints/1%1b`],
          ] as const
          for (const [method, path] of paths) {
            for (const headers of [auth, {}]) {
              const answer = yield* httpRequest(port, path, {
                method,
                headers,
                ...(method === "POST" ? { body: "[]" } : {}),
              })
              assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
              assert.deepStrictEqual(JSON.parse(answer.text), { status_code: 404, error: "Not found." })
            }
          }
          const query = yield* httpRequest(
            port,
            `/partners/${slug}/webhooks/endpoints/1/deliveries?status=fail%00ed`,
            { headers: auth },
          )
          assert.strictEqual(query.status, 400, query.text)
        }),
    )

    it.effect("answers a body nested 8,000 levels deep with 400 on both gateways", () =>
      Effect.gen(function* () {
        const { client, slug, partner } = yield* ingestSetUp("org-deep", "deep")
        const deepEvent = yield* postEvent(
          client,
          JSON.stringify(envelope("deep", prospectUpdate("p-deep", "2026-01-10T12:00:00Z"))).replace(
            '"move_in"',
            `"nested":${nested(8000)},"move_in"`,
          ),
        )
        assert.strictEqual(deepEvent.status, 400, deepEvent.text)
        assert.strictEqual(
          JSON.parse(deepEvent.text).error,
          "Request body nests arrays and objects deeper than 64 levels.",
        )
        const port = yield* gatewayPort("partner-api")
        const deepBatch = yield* httpRequest(port, `/partners/${slug}/properties`, {
          method: "POST",
          headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
          body: `[${nested(8000)}]`,
        })
        assert.strictEqual(deepBatch.status, 400, deepBatch.text)
        // Nesting inside a string is text, not structure.
        const inString = yield* postEvent(
          client,
          envelope("deep", prospectUpdate("p-text", "2026-01-10T12:00:00Z", { note: "[".repeat(9000) })),
        )
        assert.strictEqual(inString.status, 202, inString.text)
      }),
    )
  })
})

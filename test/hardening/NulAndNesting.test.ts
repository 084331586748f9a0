import { randomBytes } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Auth } from "../../backend/auth/Auth.ts"
import { envelope, ingestSetUp, postEvent, prospectUpdate } from "../support/Ingest.ts"
import {
  audienceOf,
  createClient,
  gatewayPort,
  httpRequest,
  obtainToken,
  requestToken,
} from "../support/Auth.ts"
import { issueSource, prospectService, prospectPartner, prospectSetUp } from "../support/Prospects.ts"
import { createOwnerThroughApi, query } from "../support/Roster.ts"

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

    it.effect(
      "refuses a control character or an oversized id in a nested property or unit with 422 on both gateways, storing nothing",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* prospectSetUp("org-nested-nul", "nested-nul")
          const legacy = yield* Effect.flatMap(Effect.service(Auth), (auth) =>
            auth.createClient({
              gateway: "ingest",
              name: "legacy integration",
              owners: [slug],
              source: "nested-nul",
              legacyPartnerScopes: ["prospects:write"],
            }),
          ).pipe(Effect.orDie)
          yield* issueSource({ code: "nested-nul", clients: [partner.clientId, legacy.clientId] })
          const gateways = [
            { port: yield* gatewayPort("partner-api"), token: partner.token },
            { port: yield* gatewayPort("ingest-api"), token: yield* obtainToken("ingest", legacy) },
          ]
          const CONTROL = "External system id must not contain control characters"
          const cases: ReadonlyArray<readonly [Record<string, unknown>, Record<string, string>]> = [
            [{ unit: { external_system_id: "a\u0000" } }, { "unit.external_system_id": CONTROL }],
            [{ property: { external_system_id: "a\u0000b" } }, { "property.external_system_id": CONTROL }],
            [
              { property: { external_system_id: "p\u001b[2J" }, unit: { external_system_id: "u\u0085" } },
              { "property.external_system_id": CONTROL, "unit.external_system_id": CONTROL },
            ],
            [
              { unit: { external_system_id: "u".repeat(256), name: "1" } },
              { "unit.external_system_id": "External system id is too long (maximum is 255 characters)" },
            ],
            // Told with the prospect's own field errors, in one answer.
            [
              { first_name: "a\u0000", unit: { external_system_id: "a\u0000" } },
              {
                first_name: "First name must not contain control characters",
                "unit.external_system_id": CONTROL,
              },
            ],
          ]
          for (const { port, token } of gateways) {
            for (const [fields, errors] of cases) {
              const answer = yield* httpRequest(port, `/partners/${slug}/prospects`, {
                method: "POST",
                headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
                body: JSON.stringify({
                  prospect: { source: "nested-nul", source_prospect_id: "nul-1", ...fields },
                }),
              })
              assert.strictEqual(answer.status, 422, `${port} ${JSON.stringify(fields)}: ${answer.text}`)
              assert.deepStrictEqual(JSON.parse(answer.text), {
                status_code: 422,
                error: "Prospect invalid.",
                prospect: errors,
                errors: Object.fromEntries(
                  Object.entries(errors).map(([field, message]) => [field, [message]]),
                ),
              })
            }
          }
          const stored = yield* query(
            (sql) => sql<Array<{ prospects: number; properties: number; units: number }>>`
              select (select count(*)::int from prospects where source = 'nested-nul') as prospects,
                     (select count(*)::int from properties p join owners o on o.id = p.owner_id
                      where o.slug = ${slug}) as properties,
                     (select count(*)::int from units u join properties p on p.id = u.property_id
                      join owners o on o.id = p.owner_id where o.slug = ${slug}) as units`,
          )
          // Only what the owner was provisioned with.
          assert.deepStrictEqual(stored[0], { prospects: 0, properties: 1, units: 1 })
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

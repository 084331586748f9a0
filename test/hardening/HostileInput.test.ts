import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { routesFor } from "../../backend/App.ts"
import { authService, gatewayPort, httpRequest } from "../support/Auth.ts"
import { issueSource, prospectPartner } from "../support/Prospects.ts"
import { createOwnerThroughApi } from "../support/Roster.ts"

const service = authService()

/** A body nested `depth` levels deep (objects in arrays in objects...). */
const deep = (depth: number): unknown => (depth === 0 ? "x" : { address: [deep(depth - 1)] })
const long = "ß".repeat(50_000)

/** Shapes a client gets wrong, or an attacker tries: each must get an answer, never a 500. */
const hostileValues: ReadonlyArray<unknown> = [
  null,
  0,
  -1,
  1e308,
  "",
  "x",
  true,
  {},
  [],
  [null],
  [0],
  ["x"],
  [[]],
  [{}],
  [{ external_system_id: 5 }],
  [{ external_system_id: "" }],
  [{ external_system_id: "a", address: null }],
  [{ external_system_id: "a", address: [] }],
  [{ external_system_id: "a", address: { line_one: 7, zip: { a: 1 }, state: [] } }],
  [
    {
      external_system_id: "a",
      building_name: "B",
      address: { line_one: "#", city: "C", state: "ZZ", zip: 99999999999 },
    },
  ],
  [
    {
      external_system_id: "a",
      building_name: "B",
      address: { line_one: long, city: long, state: "IL", zip: "62704" },
    },
  ],
  [{ external_system_id: long, property_external_id: long, name: long }],
  [{ external_system_id: "a", default_coverage: { type: "multiplier", value: -1 } }],
  [{ external_system_id: "a", default: "yes", routing_number: 21000021, account_number: 1e30 }],
  [
    {
      external_system_id: "\u0000\u202e",
      display_name: "\ud800",
      routing_number: "０２１０００００２１",
      account_number: "１",
    },
  ],
  [
    {
      __proto__: { polluted: true },
      constructor: { prototype: { polluted: true } },
      external_system_id: "p",
    },
  ],
  { external_org_id: null, name: 5 },
  { external_org_id: "o", embedded_frame_ancestors: "https://a.example" },
  { external_org_id: "o", embedded_frame_ancestors: ["javascript:alert(1)", "https://"] },
  { external_org_id: "o", max_coverage_amount_cents: 1.5 },
  {
    external_org_id: "o",
    brand_logo_url: "https://a.example/x.png'; script-src *",
    brand_accent_color: "#zzzzzz",
  },
  { external_org_id: "o", brand_logo_url: ["https://a.example/x.png"], brand_accent_color: 0x0055aa },
  { external_org_id: long, name: long },
  { prospect: null },
  { prospect: [] },
  { prospect: "x" },
  { prospect: { source: "hostile" } },
  { prospect: { source: "hostile", source_prospect_id: long, email: long, first_name: long } },
  {
    prospect: {
      source: "hostile",
      source_prospect_id: "h-1",
      phone: 5559876543,
      birthdate: "2025-02-30",
      monthly_rent_cents: 1e308,
      terms_accepted_at: "yesterday",
      authorized_members: [null, 5, { first_name: [] }],
      guarantor_coverage: "yes",
    },
  },
  {
    prospect: {
      source: "hostile",
      source_prospect_id: "h-2",
      property: { external_system_id: 5, address: [] },
      unit: "4B",
    },
  },
  {
    prospect: {
      source: "hostile",
      source_prospect_id: "h-3",
      property: [{}],
      unit: { external_system_id: long, name: long, default_coverage: { type: "multiplier", value: 1e308 } },
    },
  },
  {
    prospect: {
      source: "hostile",
      source_prospect_id: "h-4",
      authorized_members: Array.from({ length: 5000 }, () => ({})),
    },
  },
  { prospect: { source: "hostile", source_prospect_id: "nul\u0000", first_name: "a\u0000b" } },
  [
    {
      external_system_id: "nul",
      building_name: "a\u0000b",
      address: { line_one: "1 Main St", city: "C", state: "IL", zip: "62704" },
    },
  ],
  deep(2000),
  Array.from({ length: 501 }, () => ({})),
]

/** Raw bodies that are not JSON documents of any kind. */
const hostileTexts: ReadonlyArray<string> = [
  "",
  "{",
  "[",
  "nul",
  '{"a":}',
  "\u0000",
  '"unterminated',
  "[1,]",
  "{}{}",
]

describe("hostile input", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers every JSON route of the partner gateway without a 500, whatever the body", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        yield* issueSource({ code: "hostile", clients: [partner.clientId] })
        const slug = yield* createOwnerThroughApi(partner, { external_org_id: "hostile", name: "Hostile" })
        const port = yield* gatewayPort("partner-api")
        const routes = routesFor("partner-api", "development").filter(
          (r) => r.method === "POST" || r.method === "PUT",
        )
        assert.isNotEmpty(routes)
        const bodies = [...hostileValues.map((value) => JSON.stringify(value)), ...hostileTexts]
        const answers: Array<string> = []
        for (const route of routes) {
          const path = route.path.replace(":owner_slug", slug).replace(/:[a-z_]+/g, "x")
          for (const body of bodies) {
            for (const contentType of [
              "application/json",
              "application/x-www-form-urlencoded",
              "text/plain",
            ]) {
              const answer = yield* httpRequest(port, path, {
                method: route.method,
                headers: { authorization: `Bearer ${partner.token}`, "content-type": contentType },
                body,
              })
              answers.push(`${route.method} ${path} ${contentType} ${body.slice(0, 60)} -> ${answer.status}`)
              assert.isBelow(answer.status, 500, answers.at(-1))
              assert.doesNotThrow(() => JSON.parse(answer.text), answers.at(-1))
            }
          }
        }
        // The roster is still whole: the hostile batches wrote nothing that breaks a normal one.
        const ok = yield* httpRequest(port, `/partners/${slug}/properties`, {
          method: "POST",
          headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
          body: JSON.stringify([
            {
              external_system_id: "after",
              building_name: "After",
              address: { line_one: "1 Main St", city: "Springfield", state: "IL", zip: "62704" },
            },
          ]),
        })
        assert.strictEqual(ok.status, 200, ok.text)
        assert.isUndefined((Object.prototype as Record<string, unknown>).polluted, "no prototype pollution")
      }),
    )
  })
})

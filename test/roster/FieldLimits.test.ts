import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FIELD_LIMITS } from "../../backend/contract/FieldLimits.ts"
import { authService, gatewayPort, httpRequest } from "../support/Auth.ts"
import { issueSource, prospectPartner } from "../support/Prospects.ts"
import {
  type BatchBody,
  createOwnerThroughApi,
  postJson,
  postOwner,
  query,
  rosterPartner,
} from "../support/Roster.ts"

const service = authService()

/** Text that does not compress, so Postgres's index limit is not hidden by TOAST compression. */
const noise = (characters: number) =>
  randomBytes(Math.ceil(characters / 2))
    .toString("hex")
    .slice(0, characters)
const ADDRESS = { line_one: "1 Main St", city: "Springfield", state: "IL", zip: "62704" }
const TOO_LONG = (max: number) => [`is too long (maximum is ${max} characters)`]
const CONTROL = ["must not contain control characters"]

let owners = 0
const ownerWithPartner = Effect.gen(function* () {
  const partner = yield* rosterPartner()
  owners++
  const slug = yield* createOwnerThroughApi(partner, {
    external_org_id: `org-limits-${owners}`,
    name: `Limits Owner ${owners}`,
  })
  return { partner, slug }
})

const outcomes = (body: BatchBody) => body.results.map((r) => [r.action, r.errors])

describe("the field limits of docs/api.md", () => {
  it("lists every field of the table with its limit", () => {
    const doc = readFileSync(fileURLToPath(new URL("../../docs/api.md", import.meta.url)), "utf8")
    for (const [field, max] of Object.entries(FIELD_LIMITS)) {
      const row = doc.split("\n").find((line) => new RegExp(`^\\| ${max} +\\|.*\`${field}\``).test(line))
      assert.isDefined(row, `${field}: ${max}`)
    }
  })
})

describe("text field limits", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("fails only the item with an oversized or control-character field; the rest are written", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        const answer = yield* postJson<BatchBody>(partner, `/partners/${slug}/properties`, [
          { external_system_id: "ok-1", building_name: "First", address: ADDRESS },
          { external_system_id: noise(9000), building_name: "Long id", address: ADDRESS },
          { external_system_id: "big-name", building_name: noise(1_500_000), address: ADDRESS },
          { external_system_id: "ansi", building_name: "\u001b[31mRed", address: ADDRESS },
          {
            external_system_id: "crlf",
            building_name: "Hall",
            address: { ...ADDRESS, city: "A\r\nX-Injected: 1" },
          },
          { external_system_id: "nul", building_name: "a\u0000b", address: ADDRESS },
          { external_system_id: "c1", building_name: "a\u009b31mb", address: ADDRESS },
          { external_system_id: "ok-2", building_name: "Second", address: ADDRESS },
        ])
        assert.strictEqual(answer.status, 200, answer.text.slice(0, 500))
        assert.deepStrictEqual(outcomes(answer.body), [
          ["created", undefined],
          ["failed", { external_system_id: TOO_LONG(FIELD_LIMITS.external_system_id) }],
          ["failed", { building_name: TOO_LONG(FIELD_LIMITS.building_name) }],
          ["failed", { building_name: CONTROL }],
          ["failed", { "address.city": CONTROL }],
          ["failed", { building_name: CONTROL }],
          ["failed", { building_name: CONTROL }],
          ["created", undefined],
        ])
        const stored = yield* query(
          (sql) => sql<Array<{ external_system_id: string }>>`
            select p.external_system_id from properties p join owners o on o.id = p.owner_id
            where o.slug = ${slug} order by p.id`,
        )
        assert.deepStrictEqual(
          stored.map((r) => r.external_system_id),
          ["ok-1", "ok-2"],
        )
      }),
    )

    it.effect("holds bank accounts and units to the same limits, item by item", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        const accounts = yield* postJson<BatchBody>(partner, `/partners/${slug}/bank_accounts`, [
          {
            external_system_id: "ba-1",
            display_name: "Ops",
            routing_number: "021000021",
            account_number: "1234",
          },
          {
            external_system_id: "ba-2",
            display_name: "\u001b]0;pwned\u0007",
            routing_number: "021000021",
            account_number: "5678",
          },
          {
            external_system_id: noise(300),
            display_name: "Long",
            routing_number: "021000021",
            account_number: "9",
          },
        ])
        assert.strictEqual(accounts.status, 200, accounts.text)
        assert.deepStrictEqual(outcomes(accounts.body), [
          ["created", undefined],
          ["failed", { display_name: CONTROL }],
          ["failed", { external_system_id: TOO_LONG(FIELD_LIMITS.external_system_id) }],
        ])
        yield* postJson(partner, `/partners/${slug}/properties`, [
          { external_system_id: "p-1", building_name: "Tower", address: ADDRESS },
        ])
        const units = yield* postJson<BatchBody>(partner, `/partners/${slug}/units`, [
          { external_system_id: "u-1", property_external_id: "p-1", name: "1A" },
          { external_system_id: "u-2", property_external_id: "p-1", name: "2A\u0000" },
          { external_system_id: "u-3", property_external_id: "p-1", pms_unit_id: noise(256) },
          {
            external_system_id: "u-4",
            property_external_id: "p-1",
            address: { line_one: "1 Main St\u0085Apt 4" },
          },
        ])
        assert.strictEqual(units.status, 200, units.text)
        assert.deepStrictEqual(outcomes(units.body), [
          ["created", undefined],
          ["failed", { name: CONTROL }],
          ["failed", { pms_unit_id: TOO_LONG(FIELD_LIMITS.pms_unit_id) }],
          ["failed", { "address.line_one": CONTROL }],
        ])
      }),
    )

    it.effect("refuses an owner or a prospect with an oversized or control-character field with a 422", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const owner = yield* postOwner(partner, { external_org_id: "org-ansi", name: "Acme\u001b[2J" })
        assert.strictEqual(owner.status, 422, owner.text)
        assert.deepStrictEqual(JSON.parse(owner.text).errors, { name: CONTROL })
        const longOrg = yield* postOwner(partner, { external_org_id: noise(9000), name: "Acme" })
        assert.strictEqual(longOrg.status, 422, longOrg.text)
        assert.deepStrictEqual(JSON.parse(longOrg.text).errors, {
          external_org_id: TOO_LONG(FIELD_LIMITS.external_org_id),
        })

        const prospects = yield* prospectPartner()
        yield* issueSource({ code: "limits", clients: [prospects.clientId] })
        const slug = yield* createOwnerThroughApi(prospects, { external_org_id: "org-limits-p", name: "P" })
        const prospect = yield* postJson(prospects, `/partners/${slug}/prospects`, {
          prospect: {
            source: "limits",
            source_prospect_id: "p-1",
            first_name: "\u001b[31mRed",
            last_name: noise(256),
          },
        })
        assert.strictEqual(prospect.status, 422, prospect.text)
        assert.deepStrictEqual(prospect.body.prospect, {
          first_name: "First name must not contain control characters",
          last_name: `Last name is too long (maximum is ${FIELD_LIMITS.last_name} characters)`,
        })
      }),
    )

    it.effect("documents each field's limit as maxLength in the OpenAPI document", () =>
      Effect.gen(function* () {
        const answer = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
        interface FieldSchema {
          readonly maxLength?: number
          readonly pattern?: string
          readonly anyOf?: ReadonlyArray<{ readonly maxLength?: number }>
        }
        const schemas = (
          JSON.parse(answer.text) as {
            components: { schemas: Record<string, { properties: Record<string, FieldSchema> }> }
          }
        ).components.schemas
        const fieldOf = (schema: string, field: string) => schemas[schema]?.properties[field]
        /** A field's `maxLength`, also when it is optional (`anyOf` with null). */
        const maxLength = (schema: string, field: string) => {
          const found = fieldOf(schema, field)
          return found?.maxLength ?? found?.anyOf?.find((s) => s.maxLength !== undefined)?.maxLength
        }
        assert.strictEqual(maxLength("PropertyItem", "building_name"), FIELD_LIMITS.building_name)
        assert.strictEqual(maxLength("PropertyItem", "external_system_id"), FIELD_LIMITS.external_system_id)
        assert.strictEqual(
          fieldOf("PropertyItem", "external_system_id")?.pattern,
          "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",
        )
        assert.strictEqual(maxLength("PropertyAddress", "city"), FIELD_LIMITS.city)
        assert.strictEqual(maxLength("BankAccountItem", "display_name"), FIELD_LIMITS.display_name)
        assert.strictEqual(maxLength("UnitItem", "name"), FIELD_LIMITS.name)
        assert.strictEqual(maxLength("PropertyOwnerInput", "external_org_id"), FIELD_LIMITS.external_org_id)
        assert.strictEqual(maxLength("ProspectInput", "first_name"), FIELD_LIMITS.first_name)
      }),
    )
  })
})

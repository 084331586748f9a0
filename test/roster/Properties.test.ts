import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { normalizeStreetLine } from "../../backend/roster/Address.ts"
import { Roster } from "../../backend/roster/Roster.ts"
import { authService } from "../support/Auth.ts"
import {
  createOwnerThroughApi,
  postBatch,
  postJson,
  postOwner,
  query,
  type RosterPartner,
  rosterPartner,
} from "../support/Roster.ts"

const service = authService()

let owners = 0
/** A fresh owner created through the API by a fresh partner. */
const ownerWithPartner = (extra: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const partner = yield* rosterPartner()
    owners++
    const externalOrgId = `org-property-${owners}`
    const owner = { external_org_id: externalOrgId, name: `Property Owner ${owners}`, ...extra }
    const slug = yield* createOwnerThroughApi(partner, owner)
    // The default policy holder of the owner's buildings.
    return { partner, slug, externalOrgId, policyHolder: `${String(owner.name)}, LLC` }
  })

const MAIN_ADDRESS = {
  line_one: "123 N Main St Apt 4",
  city: "Springfield",
  state: "Illinois",
  zip: "62701-1234",
}
const MAIN_SHOWN = { line_one: "123 North Main Street", city: "Springfield", state: "IL", zip: "62701" }

const property = (externalId: string, extra: Record<string, unknown> = {}) => ({
  external_system_id: externalId,
  building_name: "Main Tower",
  address: MAIN_ADDRESS,
  ...extra,
})

/** An applied property's result as the contract shows it. */
const shown = (externalId: string, action: "created" | "updated", extra: Record<string, unknown> = {}) => ({
  external_system_id: externalId,
  action,
  building_name: "Main Tower",
  address: MAIN_SHOWN,
  type: "multifamily",
  active: true,
  ...extra,
})

const properties = (partner: RosterPartner, slug: string, items: ReadonlyArray<unknown>) =>
  postBatch(partner, slug, "properties", items)

interface StoredProperty {
  readonly id: string
  readonly external_system_id: string | null
  readonly building_name: string
  readonly street: string
  readonly street_key: string
  readonly city: string
  readonly state: string
  readonly zip: string
  readonly type: string
  readonly policy_holder_name: string | null
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly default_coverage_type: string
  readonly default_coverage_value: string
  readonly bank_account_external_id: string | null
  readonly active: boolean
  readonly renter_guarantee_enabled: boolean
}

/** The owner's buildings as stored, in creation order. */
const stored = (slug: string) =>
  query(
    (sql) => sql<Array<StoredProperty>>`
      select p.id, p.external_system_id, p.building_name, p.street, p.street_key, p.city, p.state, p.zip, p.type,
             p.policy_holder_name, p.pms_type, p.pms_property_id, p.default_coverage_type,
             p.default_coverage_value::float8::text as default_coverage_value,
             b.external_system_id as bank_account_external_id, p.active, p.renter_guarantee_enabled
      from properties p join owners o on o.id = p.owner_id
      left join bank_accounts b on b.id = p.bank_account_id
      where o.slug = ${slug} order by p.id`,
  ).pipe(Effect.map((rows) => [...rows]))

const storedOne = (slug: string, externalId: string) =>
  Effect.map(stored(slug), (rows) => rows.find((r) => r.external_system_id === externalId)!)

/** A building the service made itself (an owner with an existing relationship), not yet linked to an identifier. */
const serviceBuilding = (
  slug: string,
  building: {
    readonly building_name: string
    readonly line_one: string
    readonly zip?: string
    readonly pms_type?: string
    readonly pms_property_id?: string
  },
) => {
  const street = normalizeStreetLine(building.line_one)
  return query(
    (sql) => sql<Array<{ id: string }>>`
      insert into properties (owner_id, building_name, street_key, street, city, state, zip, pms_type, pms_property_id)
      select id, ${building.building_name}, ${street.key}, ${street.display}, 'Springfield', 'IL',
             ${building.zip ?? "62701"}, ${building.pms_type ?? null}, ${building.pms_property_id ?? null}
      from owners where slug = ${slug}
      returning id`,
  ).pipe(Effect.map(([row]) => row!.id))
}

describe("POST /partners/{owner_slug}/properties", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
    describe("conventions", () => {
      it.effect("creates a building and answers with its stored building_name and normalized address", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          const body = yield* properties(partner, slug, [property("prop-1")])
          assert.deepStrictEqual(body, {
            status_code: 200,
            results: [shown("prop-1", "created")],
            meta: { created: 1, updated: 0, failed: 0 },
          })
          const [row] = yield* stored(slug)
          assert.deepInclude(row, {
            external_system_id: "prop-1",
            street: "123 North Main Street",
            street_key: "123 N MAIN ST",
            state: "IL",
            zip: "62701",
          })
        }),
      )

      it.effect("updates the same building when the payload is sent again (resend is an update)", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          yield* properties(partner, slug, [property("prop-1")])
          const again = yield* properties(partner, slug, [property("prop-1")])
          assert.deepStrictEqual(again, {
            status_code: 200,
            results: [shown("prop-1", "updated")],
            meta: { created: 0, updated: 1, failed: 0 },
          })
          assert.strictEqual((yield* stored(slug)).length, 1)
        }),
      )

      it.effect("keeps the stored value of an omitted field and clears an optional field sent as null", () =>
        Effect.gen(function* () {
          const { partner, slug, policyHolder } = yield* ownerWithPartner()
          yield* postBatch(partner, slug, "bank_accounts", [
            {
              external_system_id: "ba-1",
              display_name: "Main",
              routing_number: "021000021",
              account_number: "1111",
            },
            {
              external_system_id: "ba-2",
              display_name: "Other",
              routing_number: "021000021",
              account_number: "2222",
            },
          ])
          const full = {
            policy_holder_name: "Main Tower Holdings LLC",
            pms_type: "yardi",
            pms_property_id: "MT-1",
            default_coverage: { type: "multiplier", value: 1.5 },
            bank_account_external_id: "ba-2",
            type: "single_address_garden_community",
          }
          yield* properties(partner, slug, [property("prop-1", full)])
          const omitted = yield* properties(partner, slug, [property("prop-1")])
          assert.deepStrictEqual(omitted.results, [
            shown("prop-1", "updated", { type: "single_address_garden_community" }),
          ])
          assert.deepInclude(yield* storedOne(slug, "prop-1"), {
            policy_holder_name: "Main Tower Holdings LLC",
            pms_type: "yardi",
            pms_property_id: "MT-1",
            default_coverage_type: "multiplier",
            default_coverage_value: "1.5",
            bank_account_external_id: "ba-2",
            type: "single_address_garden_community",
          })
          const cleared = yield* properties(partner, slug, [
            property("prop-1", {
              policy_holder_name: null,
              pms_type: null,
              pms_property_id: null,
              default_coverage: null,
              bank_account_external_id: null,
            }),
          ])
          assert.strictEqual(cleared.results[0]!.action, "updated")
          assert.deepInclude(yield* storedOne(slug, "prop-1"), {
            policy_holder_name: policyHolder,
            pms_type: null,
            pms_property_id: null,
            default_coverage_type: "multiplier",
            default_coverage_value: "1",
            bank_account_external_id: null,
            type: "single_address_garden_community",
          })
        }),
      )

      it.effect(
        "defaults type to multifamily and default_coverage to a 1.0 multiplier; policy_holder_name is optional",
        () =>
          Effect.gen(function* () {
            const { partner, slug, policyHolder } = yield* ownerWithPartner()
            const body = yield* properties(partner, slug, [
              property("prop-default"),
              property("prop-sent", {
                building_name: "Cottage",
                type: "single_family",
                policy_holder_name: "Cottage Holdings LLC",
                default_coverage: { type: "multiplier", value: 2 },
              }),
            ])
            assert.deepStrictEqual(
              body.results.map((r) => [r.action, r.type]),
              [
                ["created", "multifamily"],
                ["created", "single_family"],
              ],
            )
            assert.deepInclude(yield* storedOne(slug, "prop-default"), {
              type: "multifamily",
              policy_holder_name: policyHolder,
              default_coverage_type: "multiplier",
              default_coverage_value: "1",
              bank_account_external_id: null,
              active: true,
            })
            assert.deepInclude(yield* storedOne(slug, "prop-sent"), {
              type: "single_family",
              policy_holder_name: "Cottage Holdings LLC",
              default_coverage_value: "2",
            })
          }),
      )

      it.effect("accepts only yardi or realpage as pms_type, and checks every field of the item", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          const body = yield* properties(partner, slug, [
            property("prop-appfolio", { pms_type: "appfolio", pms_property_id: "A-1" }),
            property("prop-type", { type: "duplex" }),
            property("prop-coverage", { default_coverage: { type: "flat", value: 0 } }),
            property("prop-state", { address: { ...MAIN_ADDRESS, state: "Calif" } }),
            property("prop-zip", { address: { ...MAIN_ADDRESS, zip: "6270" } }),
            { external_system_id: "prop-bare" },
            property("prop-realpage", { building_name: "RP", pms_type: "realpage", pms_property_id: "R-1" }),
          ])
          assert.deepStrictEqual(body.results.slice(0, 6), [
            {
              external_system_id: "prop-appfolio",
              action: "failed",
              errors: { pms_type: [`must be "yardi" or "realpage"`] },
            },
            {
              external_system_id: "prop-type",
              action: "failed",
              errors: {
                type: [
                  `must be "single_family" or "garden_community" or "multifamily" or "single_address_garden_community"`,
                ],
              },
            },
            {
              external_system_id: "prop-coverage",
              action: "failed",
              // The union with null hides which member failed: the message names the whole shape.
              errors: { default_coverage: ["must be an object of the documented shape or null"] },
            },
            {
              external_system_id: "prop-state",
              action: "failed",
              errors: {
                "address.state": [
                  "is not a US state, territory or military state (two letters or full name)",
                ],
              },
            },
            {
              external_system_id: "prop-zip",
              action: "failed",
              errors: { "address.zip": ["must be a five-digit ZIP code (ZIP+4 is accepted)"] },
            },
            {
              external_system_id: "prop-bare",
              action: "failed",
              errors: { building_name: ["is required"], address: ["is required"] },
            },
          ])
          assert.deepStrictEqual(body.results[6], shown("prop-realpage", "created", { building_name: "RP" }))
          assert.deepStrictEqual(body.meta, { created: 1, updated: 0, failed: 6 })
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.external_system_id, r.pms_type]),
            [["prop-realpage", "realpage"]],
          )
        }),
      )

      it.effect(
        "fails an item naming an unregistered bank account; null reverts to the owner's default",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* ownerWithPartner()
            yield* postBatch(partner, slug, "bank_accounts", [
              {
                external_system_id: "ba-1",
                display_name: "Main",
                routing_number: "021000021",
                account_number: "1111",
              },
              {
                external_system_id: "ba-2",
                display_name: "Other",
                routing_number: "021000021",
                account_number: "2222",
              },
            ])
            const body = yield* properties(partner, slug, [
              property("prop-1", { bank_account_external_id: "ba-2" }),
              property("prop-2", { building_name: "Annex", bank_account_external_id: "ba-unknown" }),
              property("prop-1", { bank_account_external_id: "ba-unknown" }),
            ])
            const unknown = {
              bank_account_external_id: ["is not a registered bank account of this owner: register it first"],
            }
            assert.deepStrictEqual(body.results, [
              shown("prop-1", "created"),
              { external_system_id: "prop-2", action: "failed", errors: unknown },
              { external_system_id: "prop-1", action: "failed", errors: unknown },
            ])
            assert.deepStrictEqual(
              (yield* stored(slug)).map((r) => [r.external_system_id, r.bank_account_external_id]),
              [["prop-1", "ba-2"]],
            )
            yield* properties(partner, slug, [property("prop-1", { bank_account_external_id: null })])
            assert.isNull((yield* storedOne(slug, "prop-1")).bank_account_external_id)
          }),
      )

      it.effect(
        "removes a building from the roster with active false (stored inactive) and restores it with true",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* ownerWithPartner()
            yield* properties(partner, slug, [
              property("prop-1"),
              property("prop-2", { building_name: "Annex" }),
            ])
            const removed = yield* properties(partner, slug, [property("prop-1", { active: false })])
            assert.deepStrictEqual(removed.results, [shown("prop-1", "updated", { active: false })])
            assert.isFalse((yield* storedOne(slug, "prop-1")).active)
            // Omitting `active` keeps it inactive; omitting the building from a batch never removes it.
            const refreshed = yield* properties(partner, slug, [property("prop-1")])
            assert.deepStrictEqual(refreshed.results, [shown("prop-1", "updated", { active: false })])
            const restored = yield* properties(partner, slug, [property("prop-1", { active: true })])
            assert.deepStrictEqual(restored.results, [shown("prop-1", "updated")])
            assert.deepStrictEqual(
              (yield* stored(slug)).map((r) => [r.external_system_id, r.active]),
              [
                ["prop-1", true],
                ["prop-2", true],
              ],
            )
          }),
      )

      it.effect("applies items in order; a failed item changes nothing and does not stop the others", () =>
        Effect.gen(function* () {
          const { partner, slug, policyHolder } = yield* ownerWithPartner()
          const body = yield* properties(partner, slug, [
            property("prop-1"),
            property("prop-2", { type: "castle" }),
            // The building prop-1 made two items ago: one building, one identifier.
            property("prop-3"),
            property("prop-1", { building_name: "Main Tower", policy_holder_name: "Second write wins" }),
            property("prop-4", { building_name: "Annex" }),
          ])
          assert.deepStrictEqual(
            body.results.map((r) => [r.external_system_id, r.action]),
            [
              ["prop-1", "created"],
              ["prop-2", "failed"],
              ["prop-3", "failed"],
              ["prop-1", "updated"],
              ["prop-4", "created"],
            ],
          )
          assert.deepStrictEqual(body.meta, { created: 2, updated: 1, failed: 2 })
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.external_system_id, r.building_name, r.policy_holder_name]),
            [
              ["prop-1", "Main Tower", "Second write wins"],
              ["prop-4", "Annex", policyHolder],
            ],
          )
        }),
      )

      it.effect("refuses a batch of 501 items whole with 422, writing nothing", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          const items = Array.from({ length: 501 }, (_, i) =>
            property(`prop-${i}`, { building_name: `B${i}` }),
          )
          const answer = yield* postJson(partner, `/partners/${slug}/properties`, items)
          assert.strictEqual(answer.status, 422)
          assert.strictEqual(
            answer.text,
            `{"status_code":422,"error":"A batch holds at most 500 items; this one has 501. Nothing was processed."}`,
          )
          assert.deepStrictEqual(yield* stored(slug), [])
        }),
      )

      it.effect("applies a batch of exactly 500 items with one result per item", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          const items = Array.from({ length: 500 }, (_, i) =>
            property(`prop-${i}`, { building_name: `B${i}` }),
          )
          const body = yield* properties(partner, slug, items)
          assert.deepStrictEqual(body.meta, { created: 500, updated: 0, failed: 0 })
          assert.deepStrictEqual(
            body.results.map((r) => r.external_system_id),
            items.map((i) => i.external_system_id),
          )
          assert.strictEqual((yield* stored(slug)).length, 500)
        }),
      )

      it.effect("takes a JSON array even for one item", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          const answer = yield* postJson(partner, `/partners/${slug}/properties`, property("prop-1"))
          assert.strictEqual(answer.status, 422)
          assert.strictEqual(
            answer.text,
            `{"status_code":422,"error":"The body must be a JSON array of items (even for one item)."}`,
          )
          assert.deepStrictEqual(yield* stored(slug), [])
        }),
      )
    })

    describe("matching", () => {
      it.effect(
        "matches the linked external_system_id first, so a rename and an address correction are safe",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* ownerWithPartner()
            yield* properties(partner, slug, [property("prop-1")])
            const [before] = yield* stored(slug)
            const body = yield* properties(partner, slug, [
              property("prop-1", {
                building_name: "Main Tower East",
                address: {
                  line_one: "125 North Main Street",
                  city: "Springfield",
                  state: "IL",
                  zip: "62702",
                },
              }),
            ])
            assert.deepStrictEqual(body.results, [
              shown("prop-1", "updated", {
                building_name: "Main Tower East",
                address: {
                  line_one: "125 North Main Street",
                  city: "Springfield",
                  state: "IL",
                  zip: "62702",
                },
              }),
            ])
            const rows = yield* stored(slug)
            assert.deepStrictEqual(
              rows.map((r) => [r.id, r.building_name, r.street, r.zip]),
              [[before!.id, "Main Tower East", "125 North Main Street", "62702"]],
            )
          }),
      )

      it.effect(
        "adopts a building with the same (pms_type, pms_property_id), linking it to the identifier",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* ownerWithPartner()
            const id = yield* serviceBuilding(slug, {
              building_name: "Old Name",
              line_one: "9 Elm St",
              pms_type: "yardi",
              pms_property_id: "Y-100",
            })
            const body = yield* properties(partner, slug, [
              property("prop-1", { pms_type: "yardi", pms_property_id: "Y-100" }),
            ])
            assert.deepStrictEqual(body.results, [shown("prop-1", "updated")])
            const rows = yield* stored(slug)
            assert.deepStrictEqual(
              rows.map((r) => [r.id, r.external_system_id, r.building_name, r.street]),
              [[id, "prop-1", "Main Tower", "123 North Main Street"]],
            )
            // Linked now: the pair no longer needs to be sent.
            const linked = yield* properties(partner, slug, [
              property("prop-1", { building_name: "Renamed" }),
            ])
            assert.deepStrictEqual(linked.results, [shown("prop-1", "updated", { building_name: "Renamed" })])
            assert.deepStrictEqual(
              (yield* stored(slug)).map((r) => [r.id, r.pms_property_id]),
              [[id, "Y-100"]],
            )
          }),
      )

      it.effect("uses building_name to choose among several buildings of one PMS property", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          const pms = { pms_type: "realpage", pms_property_id: "GC-1" }
          const one = yield* serviceBuilding(slug, {
            building_name: "Building 1",
            line_one: "1 Garden Way",
            ...pms,
          })
          const two = yield* serviceBuilding(slug, {
            building_name: "Building 2",
            line_one: "2 Garden Way",
            ...pms,
          })
          const body = yield* properties(partner, slug, [
            {
              ...property("gc-2", pms),
              building_name: "building 2",
              address: { ...MAIN_ADDRESS, line_one: "2 Garden Way" },
            },
          ])
          assert.deepStrictEqual(body.results, [
            shown("gc-2", "updated", {
              building_name: "building 2",
              address: { ...MAIN_SHOWN, line_one: "2 Garden Way" },
            }),
          ])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.id, r.external_system_id]),
            [
              [one, null],
              [two, "gc-2"],
            ],
          )
        }),
      )

      it.effect(
        "fails an item that several buildings of one PMS property match with nothing to separate them",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* ownerWithPartner()
            const pms = { pms_type: "yardi", pms_property_id: "Y-200" }
            yield* serviceBuilding(slug, { building_name: "Clubhouse", line_one: "1 Garden Way", ...pms })
            yield* serviceBuilding(slug, { building_name: "Clubhouse", line_one: "3 Garden Way", ...pms })
            const body = yield* properties(partner, slug, [
              property("club", { building_name: "Clubhouse", ...pms }),
            ])
            assert.deepStrictEqual(body, {
              status_code: 200,
              results: [
                {
                  external_system_id: "club",
                  action: "failed",
                  errors: {
                    building_name: ["matches 2 buildings of this PMS property; nothing separates them"],
                  },
                },
              ],
              meta: { created: 0, updated: 0, failed: 1 },
            })
            assert.deepStrictEqual(
              (yield* stored(slug)).map((r) => r.external_system_id),
              [null, null],
            )
          }),
      )

      it.effect(
        "matches building_name, normalized street line and zip: a designator matches the spelled-out suffix",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* ownerWithPartner()
            const id = yield* serviceBuilding(slug, {
              building_name: "Main Tower",
              line_one: "123 North Main Street",
            })
            const body = yield* properties(partner, slug, [
              property("prop-1", {
                building_name: "MAIN TOWER",
                address: { ...MAIN_ADDRESS, line_one: "123 N. Main St., Apt. 4B", zip: "62701-0001" },
              }),
            ])
            assert.deepStrictEqual(body.results, [
              shown("prop-1", "updated", { building_name: "MAIN TOWER" }),
            ])
            assert.deepStrictEqual(
              (yield* stored(slug)).map((r) => [r.id, r.external_system_id]),
              [[id, "prop-1"]],
            )
          }),
      )

      it.effect("does not identify a building by its street address alone", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          yield* serviceBuilding(slug, { building_name: "Main Tower", line_one: "123 North Main Street" })
          const body = yield* properties(partner, slug, [
            property("other-name", { building_name: "Main Tower Garage" }),
            property("other-zip", { address: { ...MAIN_ADDRESS, zip: "62702" } }),
          ])
          assert.deepStrictEqual(body.results, [
            shown("other-name", "created", { building_name: "Main Tower Garage" }),
            shown("other-zip", "created", { address: { ...MAIN_SHOWN, zip: "62702" } }),
          ])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => r.external_system_id),
            [null, "other-name", "other-zip"],
          )
        }),
      )

      it.effect("fails an item that several buildings at one address match, creating nothing", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          yield* serviceBuilding(slug, { building_name: "Annex", line_one: "123 North Main Street" })
          yield* serviceBuilding(slug, { building_name: "annex", line_one: "123 N Main St" })
          const body = yield* properties(partner, slug, [property("annex", { building_name: "Annex" })])
          assert.deepStrictEqual(body.results, [
            {
              external_system_id: "annex",
              action: "failed",
              errors: { building_name: ["matches 2 buildings at this address; nothing separates them"] },
            },
          ])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => r.external_system_id),
            [null, null],
          )
        }),
      )

      it.effect("fails an item whose matching building is already linked to another identifier", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          yield* properties(partner, slug, [
            property("prop-1", { pms_type: "yardi", pms_property_id: "Y-1" }),
          ])
          const body = yield* properties(partner, slug, [
            property("by-address"),
            property("by-pms", { building_name: "Elsewhere", pms_type: "yardi", pms_property_id: "Y-1" }),
          ])
          const linked = {
            external_system_id: [
              "the matching building is already linked to prop-1: one building, one identifier (the service corrects identifier changes)",
            ],
          }
          assert.deepStrictEqual(body.results, [
            { external_system_id: "by-address", action: "failed", errors: linked },
            { external_system_id: "by-pms", action: "failed", errors: linked },
          ])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.external_system_id, r.building_name]),
            [["prop-1", "Main Tower"]],
          )
        }),
      )

      it.effect("creates a building when nothing matches", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          yield* serviceBuilding(slug, { building_name: "Main Tower", line_one: "500 Oak Ave" })
          const body = yield* properties(partner, slug, [
            property("prop-new", { pms_type: "yardi", pms_property_id: "Y-NEW" }),
          ])
          assert.deepStrictEqual(body.results, [shown("prop-new", "created")])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => r.external_system_id),
            [null, "prop-new"],
          )
        }),
      )
    })

    describe("renter guarantee", () => {
      it.effect("is enabled on a building created for a guarantor_coverage_capable owner", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner({ guarantor_coverage_capable: true })
          yield* properties(partner, slug, [property("prop-1")])
          assert.isTrue((yield* storedOne(slug, "prop-1")).renter_guarantee_enabled)
        }),
      )

      it.effect("is never enabled on a matched building, even after the owner turns the flag on", () =>
        Effect.gen(function* () {
          const { partner, slug, externalOrgId } = yield* ownerWithPartner()
          yield* properties(partner, slug, [property("prop-1")])
          yield* serviceBuilding(slug, {
            building_name: "Adopted",
            line_one: "7 Elm St",
            pms_type: "yardi",
            pms_property_id: "Y-7",
          })
          yield* serviceBuilding(slug, { building_name: "Matched", line_one: "8 Elm St" })
          const flagged = yield* postOwner(partner, {
            external_org_id: externalOrgId,
            guarantor_coverage_capable: true,
          })
          assert.strictEqual(flagged.status, 200, flagged.text)
          const body = yield* properties(partner, slug, [
            property("prop-1"),
            property("adopted", { building_name: "Adopted", pms_type: "yardi", pms_property_id: "Y-7" }),
            property("matched", {
              building_name: "Matched",
              address: { ...MAIN_ADDRESS, line_one: "8 Elm Street" },
            }),
            property("fresh", { building_name: "Fresh" }),
          ])
          assert.deepStrictEqual(
            body.results.map((r) => r.action),
            ["updated", "updated", "updated", "created"],
          )
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.external_system_id, r.renter_guarantee_enabled]),
            [
              ["prop-1", false],
              ["adopted", false],
              ["matched", false],
              ["fresh", true],
            ],
          )
        }),
      )
    })

    describe("an owner with an existing relationship", () => {
      /** A managed owner with two service buildings, granted to a fresh partner for LEG-1 only. */
      const managedOwner = (name: string) =>
        Effect.gen(function* () {
          const owner = yield* Roster.use((roster) => roster.createManagedOwner(name, `org-${name}`))
          const partner = yield* rosterPartner()
          yield* Roster.use((roster) => roster.grantOwner(owner.id, partner.clientId, ["LEG-1"]))
          const granted = yield* serviceBuilding(owner.slug, {
            building_name: "Legacy One",
            line_one: "1 Legacy Ln",
            pms_type: "yardi",
            pms_property_id: "LEG-1",
          })
          const ungranted = yield* serviceBuilding(owner.slug, {
            building_name: "Legacy Two",
            line_one: "2 Legacy Ln",
            pms_type: "yardi",
            pms_property_id: "LEG-2",
          })
          return { partner, slug: owner.slug, granted, ungranted }
        })

      it.effect("matches on pms_property_id first, whatever the name and address sent", () =>
        Effect.gen(function* () {
          const { partner, slug, granted, ungranted } = yield* managedOwner("legacy-a")
          const body = yield* properties(partner, slug, [
            property("leg-1", { pms_type: "yardi", pms_property_id: "LEG-1" }),
          ])
          assert.deepStrictEqual(body.results, [shown("leg-1", "updated")])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.id, r.external_system_id]),
            [
              [granted, "leg-1"],
              [ungranted, null],
            ],
          )
        }),
      )

      it.effect("fails an item for a building outside the set granted to the partner", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* managedOwner("legacy-b")
          const body = yield* properties(partner, slug, [
            property("leg-2", { pms_type: "yardi", pms_property_id: "LEG-2" }),
            property("leg-3", { building_name: "Brand New", pms_type: "yardi", pms_property_id: "LEG-3" }),
            property("no-pms", { building_name: "No PMS" }),
          ])
          const ungranted = { pms_property_id: ["is not a building granted to these credentials"] }
          assert.deepStrictEqual(body, {
            status_code: 200,
            results: [
              { external_system_id: "leg-2", action: "failed", errors: ungranted },
              { external_system_id: "leg-3", action: "failed", errors: ungranted },
              { external_system_id: "no-pms", action: "failed", errors: ungranted },
            ],
            meta: { created: 0, updated: 0, failed: 3 },
          })
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.external_system_id, r.building_name]),
            [
              [null, "Legacy One"],
              [null, "Legacy Two"],
            ],
          )
        }),
      )

      it.effect("fails a unit item for a building outside the set granted to the partner", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* managedOwner("legacy-c")
          // Another client, granted every building, links the one this partner may not touch.
          const operatorSide = yield* rosterPartner()
          const owner = (yield* Roster.use((roster) => roster.ownerBySlug(slug)))!
          yield* Roster.use((roster) => roster.grantOwner(owner.id, operatorSide.clientId, null))
          yield* properties(operatorSide, slug, [
            property("leg-2", { pms_type: "yardi", pms_property_id: "LEG-2" }),
          ])
          yield* properties(partner, slug, [
            property("leg-1", { pms_type: "yardi", pms_property_id: "LEG-1" }),
          ])

          const body = yield* postBatch(partner, slug, "units", [
            { external_system_id: "u-1", property_external_id: "leg-1", name: "101" },
            { external_system_id: "u-2", property_external_id: "leg-2", name: "201" },
          ])
          assert.deepStrictEqual(body.results, [
            { external_system_id: "u-1", action: "created", name: "101", property_external_id: "leg-1" },
            {
              external_system_id: "u-2",
              action: "failed",
              errors: { property_external_id: ["is not a building granted to these credentials"] },
            },
          ])
        }),
      )
    })
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import {
  createOwnerThroughApi,
  postBatch,
  postJson,
  query,
  type RosterPartner,
  rosterPartner,
} from "../support/Roster.ts"
import { captureLogs } from "../support/Logs.ts"

/** Every line the service logs from warnings up, as production writes them. */
const { lines, layer: logs } = captureLogs("Warn")
const service = authService({ references: logs })

const SEED = { line_one: "12 Oak Ct", city: "Springfield", state: "IL", zip: "62701" }

let owners = 0
/**
 * A fresh owner created through the API by a fresh partner, with the building `prop-1` (seeded at 12 Oak Ct)
 * of `type`.
 */
const building = (type?: string, address: Record<string, unknown> = SEED) =>
  Effect.gen(function* () {
    const partner = yield* rosterPartner()
    owners++
    const slug = yield* createOwnerThroughApi(partner, {
      external_org_id: `org-unit-${owners}`,
      name: `Unit Owner ${owners}`,
    })
    const created = yield* postBatch(partner, slug, "properties", [
      { external_system_id: "prop-1", building_name: "Oak Court", address, ...(type ? { type } : {}) },
    ])
    assert.strictEqual(created.results[0]!.action, "created")
    return { partner, slug }
  })

const units = (partner: RosterPartner, slug: string, items: ReadonlyArray<unknown>) =>
  postBatch(partner, slug, "units", items)

const unit = (externalId: string, extra: Record<string, unknown> = {}) => ({
  external_system_id: externalId,
  property_external_id: "prop-1",
  ...extra,
})

/** An applied unit's result as the contract shows it. */
const shown = (externalId: string, action: "created" | "updated", name: string) => ({
  external_system_id: externalId,
  action,
  name,
  property_external_id: "prop-1",
})

const at = (line_one: string, extra: Record<string, unknown> = {}) => ({
  address: { line_one, city: "Springfield", state: "IL", zip: "62701", ...extra },
})

interface StoredUnit {
  readonly id: string
  readonly external_system_id: string | null
  readonly name: string
  readonly line_one: string | null
  readonly line_two: string | null
  readonly pms_unit_id: string | null
  readonly default_coverage_type: string | null
  readonly default_coverage_value: string | null
}

/** The units of the owner's building `prop-1`, in creation order. */
const stored = (slug: string) =>
  query(
    (sql) => sql<Array<StoredUnit>>`
      select u.id, u.external_system_id, u.name, u.line_one, u.line_two, u.pms_unit_id, u.default_coverage_type,
             u.default_coverage_value::float8::text as default_coverage_value
      from units u join properties p on p.id = u.property_id join owners o on o.id = p.owner_id
      where o.slug = ${slug} and p.external_system_id = 'prop-1' order by u.id`,
  ).pipe(Effect.map((rows) => [...rows]))

const names = (slug: string) =>
  Effect.map(stored(slug), (rows) => rows.map((r) => [r.external_system_id, r.name]))

/** A unit the service made itself, not yet linked to an identifier. */
const serviceUnit = (slug: string, name: string, pmsUnitId: string | null = null) =>
  query(
    (sql) => sql<Array<{ id: string }>>`
      insert into units (property_id, name, pms_unit_id)
      select p.id, ${name}, ${pmsUnitId} from properties p join owners o on o.id = p.owner_id
      where o.slug = ${slug} and p.external_system_id = 'prop-1'
      returning id`,
  ).pipe(Effect.map(([row]) => row!.id))

const buildingRow = (slug: string) =>
  query(
    (sql) => sql<Array<{ id: string; street: string; street_key: string }>>`
      select p.id, p.street, p.street_key from properties p join owners o on o.id = p.owner_id
      where o.slug = ${slug} and p.external_system_id = 'prop-1'`,
  ).pipe(Effect.map(([row]) => row!))

const NOT_DERIVABLE = { name: ["unit name required and not derivable"] }

describe("POST /partners/{owner_slug}/units", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
    describe("conventions", () => {
      it.effect("creates a unit and answers with its stored name and property_external_id", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [unit("u-1", { name: "4B", pms_unit_id: "P-4B" })])
          assert.deepStrictEqual(body, {
            status_code: 200,
            results: [shown("u-1", "created", "4B")],
            meta: { created: 1, updated: 0, failed: 0 },
          })
          assert.deepInclude((yield* stored(slug))[0], {
            external_system_id: "u-1",
            name: "4B",
            pms_unit_id: "P-4B",
          })
        }),
      )

      it.effect("updates the same unit when the payload is sent again (resend is an update)", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const item = unit("u-1", { name: "4B" })
          yield* units(partner, slug, [item])
          const again = yield* units(partner, slug, [item])
          assert.deepStrictEqual(again, {
            status_code: 200,
            results: [shown("u-1", "updated", "4B")],
            meta: { created: 0, updated: 1, failed: 0 },
          })
          assert.deepStrictEqual(yield* names(slug), [["u-1", "4B"]])
        }),
      )

      it.effect("keeps the stored value of an omitted field and clears an optional field sent as null", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          yield* units(partner, slug, [
            unit("u-1", {
              name: "4B",
              pms_unit_id: "P-4B",
              default_coverage: { type: "multiplier", value: 2 },
              ...at("12 Oak Ct Apt 4B", { line_two: "Rear entrance" }),
            }),
          ])
          yield* units(partner, slug, [unit("u-1")])
          assert.deepInclude((yield* stored(slug))[0], {
            name: "4B",
            line_one: "12 Oak Ct Apt 4B",
            line_two: "Rear entrance",
            pms_unit_id: "P-4B",
            default_coverage_type: "multiplier",
            default_coverage_value: "2",
          })
          yield* units(partner, slug, [
            unit("u-1", { pms_unit_id: null, default_coverage: null, address: null }),
          ])
          assert.deepInclude((yield* stored(slug))[0], {
            name: "4B",
            line_one: null,
            line_two: null,
            pms_unit_id: null,
            default_coverage_type: null,
            default_coverage_value: null,
          })
        }),
      )

      it.effect("inherits default_coverage from the property when none is sent (stored null)", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          yield* units(partner, slug, [
            unit("u-1", { name: "1" }),
            unit("u-2", { name: "2", default_coverage: { type: "multiplier", value: 1.5 } }),
          ])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [
              r.external_system_id,
              r.default_coverage_type,
              r.default_coverage_value,
            ]),
            [
              ["u-1", null, null],
              ["u-2", "multiplier", "1.5"],
            ],
          )
        }),
      )

      it.effect("fails an item whose property_external_id is unknown", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [
            unit("u-1", { name: "1", property_external_id: "prop-unknown" }),
            unit("u-2", { name: "2" }),
          ])
          assert.deepStrictEqual(body, {
            status_code: 200,
            results: [
              {
                external_system_id: "u-1",
                action: "failed",
                errors: {
                  property_external_id: [
                    "is not a known property: send the property first (earlier in this request or before)",
                  ],
                },
              },
              shown("u-2", "created", "2"),
            ],
            meta: { created: 1, updated: 0, failed: 1 },
          })
          const all = yield* query(
            (sql) => sql`select u.id from units u join properties p on p.id = u.property_id
                         join owners o on o.id = p.owner_id where o.slug = ${slug}`,
          )
          assert.strictEqual(all.length, 1)
        }),
      )

      it.effect("applies items in order; a failed item changes nothing and does not stop the others", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [
            unit("u-1", { name: "1" }),
            unit("u-2"),
            unit("u-3", { name: "3" }),
            unit("u-1", { name: "1A" }),
            { external_system_id: "u-4" },
          ])
          assert.deepStrictEqual(body.results, [
            shown("u-1", "created", "1"),
            { external_system_id: "u-2", action: "failed", errors: NOT_DERIVABLE },
            shown("u-3", "created", "3"),
            shown("u-1", "updated", "1A"),
            {
              external_system_id: "u-4",
              action: "failed",
              errors: { property_external_id: ["is required"] },
            },
          ])
          assert.deepStrictEqual(body.meta, { created: 2, updated: 1, failed: 2 })
          assert.deepStrictEqual(yield* names(slug), [
            ["u-1", "1A"],
            ["u-3", "3"],
          ])
        }),
      )

      it.effect("refuses a batch of 501 items whole with 422, writing nothing", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const items = Array.from({ length: 501 }, (_, i) => unit(`u-${i}`, { name: `${i}` }))
          const answer = yield* postJson(partner, `/partners/${slug}/units`, items)
          assert.strictEqual(answer.status, 422)
          assert.strictEqual(
            answer.text,
            `{"status_code":422,"error":"A batch holds at most 500 items; this one has 501. Nothing was processed."}`,
          )
          assert.deepStrictEqual(yield* stored(slug), [])
          const one = yield* postJson(partner, `/partners/${slug}/units`, unit("u-1", { name: "1" }))
          assert.strictEqual(one.status, 422)
          assert.strictEqual(
            one.text,
            `{"status_code":422,"error":"The body must be a JSON array of items (even for one item)."}`,
          )
          assert.deepStrictEqual(yield* stored(slug), [])
        }),
      )
    })

    describe("matching within the building", () => {
      it.effect("matches the linked external_system_id first, so a rename updates the same unit", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          yield* units(partner, slug, [unit("u-1", { name: "4B", pms_unit_id: "P-1" })])
          const [before] = yield* stored(slug)
          const body = yield* units(partner, slug, [unit("u-1", { name: "4C", pms_unit_id: "P-2" })])
          assert.deepStrictEqual(body.results, [shown("u-1", "updated", "4C")])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.id, r.external_system_id, r.name, r.pms_unit_id]),
            [[before!.id, "u-1", "4C", "P-2"]],
          )
        }),
      )

      it.effect(
        "adopts a unit with the same pms_unit_id (exact, whatever the naming style) and links it",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* building()
            const id = yield* serviceUnit(slug, "Unit 101", "101")
            const other = yield* serviceUnit(slug, "Unit 102", "A-102")
            const body = yield* units(partner, slug, [
              unit("u-101", { name: "Apt 101", pms_unit_id: "101" }),
              unit("u-102", { name: "102", pms_unit_id: "a-102" }),
            ])
            assert.deepStrictEqual(body.results, [
              shown("u-101", "updated", "Apt 101"),
              shown("u-102", "created", "102"),
            ])
            const rows = yield* stored(slug)
            assert.deepStrictEqual(
              rows.map((r) => [r.external_system_id, r.name, r.pms_unit_id]),
              [
                ["u-101", "Apt 101", "101"],
                [null, "Unit 102", "A-102"],
                ["u-102", "102", "a-102"],
              ],
            )
            assert.deepStrictEqual(
              rows.slice(0, 2).map((r) => r.id),
              [id, other],
            )
          }),
      )

      it.effect("matches a unit by name ignoring case, and links it", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const id = yield* serviceUnit(slug, "PH-A")
          const body = yield* units(partner, slug, [unit("u-ph", { name: "ph-a" })])
          assert.deepStrictEqual(body.results, [shown("u-ph", "updated", "ph-a")])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.id, r.external_system_id, r.name]),
            [[id, "u-ph", "ph-a"]],
          )
        }),
      )

      it.effect("fails an item whose same-named unit is linked to another identifier", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          yield* units(partner, slug, [unit("u-1", { name: "4B" })])
          const body = yield* units(partner, slug, [
            unit("u-2", { name: "4b" }),
            unit("u-3", { ...at("12 Oak Ct Apt 4B") }),
          ])
          assert.deepStrictEqual(body.results, [
            {
              external_system_id: "u-2",
              action: "failed",
              errors: { external_system_id: ["the unit named 4B is already linked to u-1"] },
            },
            {
              external_system_id: "u-3",
              action: "failed",
              errors: { external_system_id: ["the unit named 4B is already linked to u-1"] },
            },
          ])
          assert.deepStrictEqual(yield* names(slug), [["u-1", "4B"]])
        }),
      )

      it.effect("creates a unit when nothing matches", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          yield* serviceUnit(slug, "1", "P-1")
          const body = yield* units(partner, slug, [unit("u-2", { name: "2", pms_unit_id: "P-2" })])
          assert.deepStrictEqual(body.results, [shown("u-2", "created", "2")])
          assert.deepStrictEqual(yield* names(slug), [
            [null, "1"],
            ["u-2", "2"],
          ])
        }),
      )
    })

    describe("name derivation", () => {
      it.effect("takes a sent name over anything derivable", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [
            unit("u-1", {
              name: "Garden Suite",
              pms_unit_id: "P-9",
              ...at("12 Oak Ct Apt 4B", { line_two: "Apt 9" }),
            }),
          ])
          assert.deepStrictEqual(body.results, [shown("u-1", "created", "Garden Suite")])
        }),
      )

      it.effect(
        "names a unit from the designator in its own street line, dropping standard designator words",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* building()
            const body = yield* units(partner, slug, [
              unit("u-1", { ...at("12 Oak Ct Apt 4B", { line_two: "Apt 9" }), pms_unit_id: "P-1" }),
              unit("u-2", at("12 Oak Ct #5")),
              unit("u-3", at("12 Oak Court Suite 200")),
              unit("u-4", at("12 Oak Ct Penthouse")),
            ])
            assert.deepStrictEqual(body.results, [
              shown("u-1", "created", "4B"),
              shown("u-2", "created", "5"),
              shown("u-3", "created", "200"),
              shown("u-4", "created", "Penthouse"),
            ])
          }),
      )

      it.effect(
        "names a unit from its street line with the building's street removed, nonstandard words kept",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* building()
            const body = yield* units(partner, slug, [
              unit("u-1", { ...at("12 Oak Ct Loft 1", { line_two: "Apt 9" }), pms_unit_id: "P-1" }),
              unit("u-3", at("12 OAK COURT LOFT 3")),
            ])
            assert.deepStrictEqual(body.results, [
              shown("u-1", "created", "Loft 1"),
              shown("u-3", "created", "LOFT 3"),
            ])
          }),
      )

      it.effect("names a unit from a designator in line_two, or line_two verbatim when nonstandard", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [
            unit("u-1", { ...at("12 Oak Ct", { line_two: "Apt 7" }), pms_unit_id: "P-1" }),
            unit("u-2", at("12 Oak Ct", { line_two: "#8" })),
            unit("u-3", at("12 Oak Ct", { line_two: "Garden Level" })),
          ])
          assert.deepStrictEqual(body.results, [
            shown("u-1", "created", "7"),
            shown("u-2", "created", "8"),
            shown("u-3", "created", "Garden Level"),
          ])
        }),
      )

      it.effect("names a unit from its pms_unit_id when the address gives no name", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [
            unit("u-1", { pms_unit_id: "PMS-0101" }),
            unit("u-2", { ...at("12 Oak Ct"), pms_unit_id: "PMS-0102" }),
          ])
          assert.deepStrictEqual(body.results, [
            shown("u-1", "created", "PMS-0101"),
            shown("u-2", "created", "PMS-0102"),
          ])
        }),
      )

      it.effect("fails with 'unit name required and not derivable' in a multi-unit building", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [unit("u-1"), unit("u-2", at("12 Oak Ct"))])
          assert.deepStrictEqual(body, {
            status_code: 200,
            results: [
              { external_system_id: "u-1", action: "failed", errors: NOT_DERIVABLE },
              { external_system_id: "u-2", action: "failed", errors: NOT_DERIVABLE },
            ],
            meta: { created: 0, updated: 0, failed: 2 },
          })
          assert.deepStrictEqual(yield* stored(slug), [])
        }),
      )
    })

    describe("single-unit buildings", () => {
      for (const type of ["single_family", "garden_community"]) {
        it.effect(`names the unit of a ${type} building 1 by default, and refuses a second unit`, () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* building(type, { ...SEED, line_one: "7 Elm Dr" })
            const body = yield* units(partner, slug, [
              unit("u-1", at("7 Elm Dr")),
              unit("u-2", { name: "2" }),
              unit("u-3", at("7 Elm Dr")),
            ])
            const second = {
              property_external_id: [
                `a ${type} building holds exactly one unit, and this one has it already`,
              ],
            }
            assert.deepStrictEqual(body.results, [
              shown("u-1", "created", "1"),
              { external_system_id: "u-2", action: "failed", errors: second },
              { external_system_id: "u-3", action: "failed", errors: second },
            ])
            const later = yield* units(partner, slug, [
              unit("u-4", { name: "4" }),
              unit("u-1", at("7 Elm Dr")),
            ])
            assert.deepStrictEqual(
              later.results.map((r) => r.action),
              ["failed", "updated"],
            )
            assert.deepStrictEqual(yield* names(slug), [["u-1", "1"]])
          }),
        )
      }

      it.effect("matches the unit named 1 of a single-unit building when an item sends no name", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building("single_family", { ...SEED, line_one: "7 Elm Dr" })
          const id = yield* serviceUnit(slug, "1")
          const body = yield* units(partner, slug, [unit("u-home", at("7 Elm Dr"))])
          assert.deepStrictEqual(body.results, [shown("u-home", "updated", "1")])
          assert.deepStrictEqual(
            (yield* stored(slug)).map((r) => [r.id, r.external_system_id, r.name]),
            [[id, "u-home", "1"]],
          )
        }),
      )

      for (const type of ["multifamily", "single_address_garden_community"]) {
        it.effect(`lets a ${type} building hold several units`, () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* building(type)
            const body = yield* units(partner, slug, [unit("u-1", { name: "1" }), unit("u-2", { name: "2" })])
            assert.deepStrictEqual(body.meta, { created: 2, updated: 0, failed: 0 })
          }),
        )
      }
    })

    describe("building street derivation", () => {
      it.effect("derives the street its units share, in title case with expanded suffixes", () =>
        Effect.gen(function* () {
          const seed = { ...SEED, line_one: "12 OAK CT LOFT 1" }
          const { partner, slug } = yield* building(undefined, seed)
          assert.strictEqual((yield* buildingRow(slug)).street, "12 Oak Ct Loft 1")
          const body = yield* units(partner, slug, [
            unit("u-1", at("12 oak ct loft 1")),
            unit("u-2", at("12 OAK CT. LOFT 2")),
            unit("u-3", at("12 Oak Court, Loft 3")),
          ])
          assert.deepStrictEqual(body.results, [
            shown("u-1", "created", "loft 1"),
            shown("u-2", "created", "LOFT 2"),
            shown("u-3", "created", "Loft 3"),
          ])
          assert.deepInclude(yield* buildingRow(slug), { street: "12 Oak Court", street_key: "12 OAK CT" })
          // A later properties call, the seed sent again, shows the derived street.
          const later = yield* postBatch(partner, slug, "properties", [
            { external_system_id: "prop-1", building_name: "Oak Court", address: seed },
          ])
          assert.deepStrictEqual(later.results, [
            {
              external_system_id: "prop-1",
              action: "updated",
              building_name: "Oak Court",
              address: { line_one: "12 Oak Court", city: "Springfield", state: "IL", zip: "62701" },
              type: "multifamily",
              active: true,
            },
          ])
          assert.deepInclude(yield* buildingRow(slug), { street: "12 Oak Court", street_key: "12 OAK CT" })
        }),
      )

      it.effect("derives nothing from the address of a failed item", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          const body = yield* units(partner, slug, [
            unit("u-1", at("14 Oak Ct")),
            unit("u-2", at("14 Oak Ct")),
          ])
          assert.deepStrictEqual(
            body.results.map((r) => r.action),
            ["failed", "failed"],
          )
          assert.deepInclude(yield* buildingRow(slug), { street: "12 Oak Court", street_key: "12 OAK CT" })
          assert.deepStrictEqual(yield* stored(slug), [])
        }),
      )

      it.effect("keeps the street when its units' addresses share no street", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          yield* units(partner, slug, [
            unit("u-1", { name: "1", ...at("12 Oak Ct Apt 1") }),
            unit("u-2", { name: "2", ...at("14 Elm St Apt 2") }),
          ])
          assert.strictEqual((yield* buildingRow(slug)).street, "12 Oak Court")
        }),
      )

      it.effect(
        "stops once the address is locked: the disagreement is recorded and logged, not applied",
        () =>
          Effect.gen(function* () {
            const { partner, slug } = yield* building()
            const { id } = yield* buildingRow(slug)
            // What an operator's correction, or a first policy, does.
            yield* query((sql) => sql`update properties set address_locked = true where id = ${id}`)
            const body = yield* units(partner, slug, [
              unit("u-1", at("14 Oak Ct Apt 1")),
              unit("u-2", at("14 Oak Ct Apt 2")),
            ])
            assert.deepStrictEqual(body.results, [shown("u-1", "created", "1"), shown("u-2", "created", "2")])
            assert.deepInclude(yield* buildingRow(slug), { street: "12 Oak Court", street_key: "12 OAK CT" })
            const recorded = yield* query(
              (sql) => sql<Array<{ stored_street: string; derived_street: string }>>`
              select stored_street, derived_street from address_disagreements where property_id = ${id}`,
            )
            assert.deepStrictEqual(recorded, [
              { stored_street: "12 Oak Court", derived_street: "14 Oak Court" },
            ])
            const logged = lines
              .map((line) => JSON.parse(line) as { message: unknown; annotations: Record<string, unknown> })
              .filter((line) => line.annotations.property_id === id)
            assert.strictEqual(logged.length, 1, lines.join("\n"))
            assert.deepInclude(logged[0]!.annotations, {
              owner: slug,
              stored_street: "12 Oak Court",
              derived_street: "14 Oak Court",
            })
            assert.include(
              JSON.stringify(logged[0]!.message),
              "derived building street differs from the locked one",
            )
            // A property upsert does not move a locked address either.
            yield* postBatch(partner, slug, "properties", [
              {
                external_system_id: "prop-1",
                building_name: "Oak Court",
                address: { ...SEED, line_one: "14 Oak Ct" },
              },
            ])
            assert.strictEqual((yield* buildingRow(slug)).street, "12 Oak Court")
          }),
      )
    })

    it.effect(
      "applies concurrent batches for one owner one after the other, losing and doubling nothing",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* building()
          // Overlapping batches: every one creates or renames u-0..u-19, and adds ten units of its own.
          const batch = (round: number) =>
            units(partner, slug, [
              ...Array.from({ length: 20 }, (_, i) => unit(`u-${i}`, { name: `${100 + i}-r${round}` })),
              ...Array.from({ length: 10 }, (_, i) => unit(`r${round}-${i}`, { name: `${round}-${i}` })),
            ])
          const answers = yield* Effect.all(
            Array.from({ length: 6 }, (_, round) => batch(round)),
            { concurrency: "unbounded" },
          )
          for (const answer of answers)
            assert.strictEqual(answer.meta.failed, 0, JSON.stringify(answer.results))
          // Exactly one batch created the shared units; the others updated them.
          const created = answers.map(
            (a) =>
              a.results.filter((r) => r.external_system_id.startsWith("u-") && r.action === "created").length,
          )
          assert.deepStrictEqual(
            [...created].sort((a, b) => a - b),
            [0, 0, 0, 0, 0, 20],
          )
          const rows = yield* stored(slug)
          assert.strictEqual(rows.length, 20 + 6 * 10)
          assert.strictEqual(new Set(rows.map((r) => r.external_system_id)).size, rows.length)
          // The shared units carry the names of one whole batch: batches did not interleave.
          const rounds = new Set(
            rows.filter((r) => r.external_system_id!.startsWith("u-")).map((r) => r.name.split("-r")[1]),
          )
          assert.strictEqual(rounds.size, 1)
        }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import { postBatch, query } from "../support/Roster.ts"
import { captureLogs } from "../support/Logs.ts"
import {
  SEED,
  building,
  units,
  unit,
  shown,
  at,
  stored,
  names,
  serviceUnit,
  buildingRow,
  NOT_DERIVABLE,
} from "../support/Units.ts"

/** Every line the service logs from warnings up, as production writes them. */
const { lines, layer: logs } = captureLogs("Warn")
const service = authService({ references: logs })

describe("POST /partners/{owner_slug}/units: names and streets", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
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
  })
})

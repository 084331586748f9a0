import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Roster } from "../../backend/roster/Roster.ts"
import { authService } from "../support/Auth.ts"
import { postBatch, rosterPartner } from "../support/Roster.ts"
import {
  ownerWithPartner,
  MAIN_ADDRESS,
  MAIN_SHOWN,
  property,
  shown,
  properties,
  stored,
  serviceBuilding,
} from "../support/Properties.ts"

const service = authService()

describe("POST /partners/{owner_slug}/properties: matching", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
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

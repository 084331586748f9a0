import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { awaitProspect, completeProspect, prospectService } from "../support/Prospects.ts"
import { eventually, readStream } from "../support/Streams.ts"
import {
  setup,
  awaitEvents,
  body,
  NO_URLS,
  embeddedUrls,
  post,
  awaitCreatedThenReady,
} from "../support/ProspectEvents.ts"

const service = prospectService()

describe("prospect with a nested property and unit", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    describe("nested property and unit", () => {
      it.effect(
        "are created on the fly by the roster's rules, reported per item in the response and published on ROSTER; the unit defaults to the nested property",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested", {
                pms_property_id: "pms-prop-2",
                pms_unit_id: "pms-unit-2",
                property: {
                  external_system_id: "prop-2",
                  building_name: "Annex",
                  address: { line_one: "9 Elm Ave", city: "Springfield", state: "IL", zip: "62702" },
                  pms_type: "yardi",
                  pms_property_id: "pms-prop-2",
                  default_coverage: { type: "multiplier", value: 1.25 },
                },
                unit: { external_system_id: "unit-2", name: "7A", pms_unit_id: "pms-unit-2" },
              }),
            )
            assert.strictEqual(posted.status_code, 201)
            assert.deepInclude(posted.property!, { external_system_id: "prop-2", action: "created" })
            assert.deepInclude(posted.unit!, {
              external_system_id: "unit-2",
              action: "created",
              property_external_id: "prop-2",
            })
            assert.notProperty(posted.property!, "errors")
            assert.notProperty(posted.unit!, "errors")

            const ready = yield* awaitProspect(partner, slug, source, "p-nested")
            assert.deepInclude(ready, {
              property_external_id: "prop-2",
              unit_external_id: "unit-2",
              effective_coverage_amount_cents: 250_000,
              ...embeddedUrls(slug, source, "p-nested"),
            })

            const roster = yield* eventually(
              readStream("ROSTER").pipe(
                Effect.map((all) =>
                  all.filter(
                    (m) =>
                      m.subject.startsWith(`roster.${slug}.property.`) ||
                      m.subject.startsWith(`roster.${slug}.unit.`),
                  ),
                ),
              ),
              (found) => found.length >= 4,
            )
            assert.deepStrictEqual(
              roster.map((m) => m.subject),
              [
                `roster.${slug}.property.created`,
                `roster.${slug}.unit.created`,
                `roster.${slug}.property.created`,
                `roster.${slug}.unit.created`,
              ],
              "prop-1 and unit-1 from provisioning, then the nested items",
            )
            assert.deepStrictEqual(roster[2]!.json, posted.property)
            assert.deepStrictEqual(roster[3]!.json, posted.unit)

            // The unit nested under a referenced (not nested) property defaults to that property.
            const referenced = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested-unit", {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property_external_id: "prop-1",
                unit: { external_system_id: "unit-9", name: "9C" },
              }),
            )
            assert.notProperty(referenced, "property")
            assert.deepInclude(referenced.unit!, {
              external_system_id: "unit-9",
              action: "created",
              property_external_id: "prop-1",
            })
            const readyToo = yield* awaitProspect(partner, slug, source, "p-nested-unit")
            assert.deepInclude(readyToo, {
              property_external_id: "prop-1",
              unit_external_id: "unit-9",
              effective_coverage_amount_cents: 200_000,
              ...embeddedUrls(slug, source, "p-nested-unit"),
            })
            const messages = yield* awaitEvents(slug, "p-nested-unit", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${referenced.prospect.id}`,
                source_prospect_id: "p-nested-unit",
                status: "ready",
                ...embeddedUrls(slug, source, "p-nested-unit"),
                pms_type: "yardi",
                pms_prospect_id: "prospect-789",
                guarantor_coverage: false,
              }),
              "PMS identifiers not supplied are omitted, never null",
            )
          }),
      )

      it.effect(
        "a nested unit without property_external_id belongs to the property the prospect references by pms_property_id",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested-pms")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested-pms", {
                pms_unit_id: "pms-unit-7",
                unit: { external_system_id: "unit-7", name: "7D", pms_unit_id: "pms-unit-7" },
              }),
            )
            assert.deepInclude(
              posted.unit!,
              { external_system_id: "unit-7", action: "created", property_external_id: "prop-1" },
              JSON.stringify(posted.unit),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-nested-pms")
            assert.deepInclude(ready, {
              unit_external_id: "unit-7",
              ...embeddedUrls(slug, source, "p-nested-pms"),
            })
          }),
      )

      it.effect(
        "a nested unit that fails is reported with its errors while the prospect is still stored, ready without URLs",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested-fail")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-nested-fail", {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property: {
                  external_system_id: "prop-3",
                  building_name: "Third Tower",
                  address: { line_one: "3 Oak St", city: "Springfield", state: "IL", zip: "62703" },
                },
                unit: { external_system_id: "unit-x" },
              }),
            )
            assert.strictEqual(posted.status_code, 201, "the prospect is stored")
            assert.deepInclude(posted.property!, { external_system_id: "prop-3", action: "created" })
            assert.deepInclude(posted.unit!, { external_system_id: "unit-x", action: "failed" })
            assert.deepStrictEqual(posted.unit!.errors, { name: ["unit name required and not derivable"] })
            assert.strictEqual(posted.prospect.status, "processing")

            const ready = yield* awaitProspect(partner, slug, source, "p-nested-fail")
            assert.strictEqual(ready.id, posted.prospect.id)
            assert.deepInclude(ready, { property_external_id: "prop-3", ...NO_URLS })
            assert.include(ready.cd_ineligibility_reasons as Array<string>, "Unit must be present")
            yield* awaitCreatedThenReady(slug, "p-nested-fail", posted.prospect.id, {
              ...NO_URLS,
              pms_type: "yardi",
              pms_prospect_id: "prospect-789",
              guarantor_coverage: false,
            })
          }),
      )
      it.effect(
        "a nested property that fails is reported with its errors, its nested unit fails too, and the prospect is still stored, ready with 'Property must be present'",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-nested-badprop")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-badprop", {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property: {
                  external_system_id: "prop-bad",
                  building_name: "Castle",
                  address: { line_one: "1 Moat Rd", city: "Springfield", state: "IL", zip: "62705" },
                  type: "castle",
                },
                unit: { external_system_id: "unit-bad", name: "1" },
              }),
            )
            assert.strictEqual(posted.status_code, 201, "the prospect is stored")
            assert.deepInclude(posted.property!, { external_system_id: "prop-bad", action: "failed" })
            assert.property(posted.property!.errors as object, "type")
            assert.deepInclude(posted.unit!, { external_system_id: "unit-bad", action: "failed" })
            assert.property(posted.unit!.errors as object, "property_external_id")
            const ready = yield* awaitProspect(partner, slug, source, "p-badprop")
            assert.deepInclude(ready, NO_URLS)
            assert.include(ready.sdi_ineligibility_reasons as Array<string>, "Property must be present")
            const roster = yield* readStream("ROSTER")
            assert.isFalse(
              roster.some(
                (m) =>
                  JSON.stringify(m.json).includes("prop-bad") || JSON.stringify(m.json).includes("unit-bad"),
              ),
              "a failed item publishes nothing",
            )
          }),
      )
    })
  })
})

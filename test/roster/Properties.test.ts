import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import { type BatchBody, postBatch, postJson, postOwner } from "../support/Roster.ts"
import {
  ownerWithPartner,
  MAIN_ADDRESS,
  property,
  shown,
  properties,
  stored,
  storedOne,
  serviceBuilding,
} from "../support/Properties.ts"

const service = authService()

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

      it.effect("applies the same item sent in concurrent requests once: one building, created once", () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner()
          const answers = yield* Effect.all(
            Array.from({ length: 8 }, () =>
              postJson<BatchBody>(partner, `/partners/${slug}/properties`, [property("prop-1")]),
            ),
            { concurrency: "unbounded" },
          )
          assert.deepStrictEqual(
            answers.map((answer) => answer.status),
            Array.from({ length: 8 }, () => 200),
            answers.map((answer) => answer.text).join("\n"),
          )
          const actions = answers.map((answer) => answer.body.results[0]!.action)
          assert.deepStrictEqual([...actions].sort(), [
            "created",
            ...Array.from({ length: 7 }, () => "updated"),
          ])
          assert.deepStrictEqual(
            answers.map((answer) => answer.body.results),
            actions.map((action) => [shown("prop-1", action as "created" | "updated")]),
          )
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
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import { postJson, query } from "../support/Roster.ts"
import {
  building,
  units,
  unit,
  shown,
  at,
  stored,
  names,
  serviceUnit,
  NOT_DERIVABLE,
} from "../support/Units.ts"

const service = authService()

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

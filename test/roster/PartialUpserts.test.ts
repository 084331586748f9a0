import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import {
  createOwnerThroughApi,
  postBatch,
  postOwner,
  query,
  type RosterPartner,
  rosterPartner,
} from "../support/Roster.ts"

const service = authService()

let owners = 0
/** A fresh owner created through the API by a fresh partner. */
const ownerWithPartner = Effect.gen(function* () {
  const partner = yield* rosterPartner()
  owners++
  const externalOrgId = `org-partial-${owners}`
  const slug = yield* createOwnerThroughApi(partner, {
    external_org_id: externalOrgId,
    name: `Partial Owner ${owners}`,
  })
  return { partner, slug, externalOrgId }
})

const ADDRESS = { line_one: "12 Oak Ct", city: "Springfield", state: "IL", zip: "62701" }
const SHOWN_ADDRESS = { line_one: "12 Oak Court", city: "Springfield", state: "IL", zip: "62701" }

const storedAccounts = (slug: string) =>
  query(
    (sql) => sql<
      Array<{
        external_system_id: string
        display_name: string
        routing_number: string
        account_number_last4: string
        account_number_sealed: Buffer
        is_default: boolean
      }>
    >`
      select b.external_system_id, b.display_name, b.routing_number, b.account_number_last4,
             b.account_number_sealed, b.id = o.default_bank_account_id as is_default
      from bank_accounts b join owners o on o.id = b.owner_id
      where o.slug = ${slug} order by b.id`,
  )

const storedProperty = (slug: string, externalId: string) =>
  query(
    (sql) => sql<
      Array<{
        building_name: string
        street: string
        city: string
        zip: string
        type: string
        pms_type: string | null
        pms_property_id: string | null
        default_coverage_value: string
        bank_account_external_id: string | null
        active: boolean
      }>
    >`
      select p.building_name, p.street, p.city, p.zip, p.type, p.pms_type, p.pms_property_id,
             p.default_coverage_value::float8::text as default_coverage_value,
             b.external_system_id as bank_account_external_id, p.active
      from properties p join owners o on o.id = p.owner_id left join bank_accounts b on b.id = p.bank_account_id
      where o.slug = ${slug} and p.external_system_id = ${externalId}`,
  ).pipe(Effect.map(([row]) => row!))

const storedUnit = (slug: string, externalId: string) =>
  query(
    (sql) => sql<
      Array<{
        name: string
        line_one: string | null
        pms_unit_id: string | null
        default_coverage_value: string | null
      }>
    >`
      select u.name, u.line_one, u.pms_unit_id, u.default_coverage_value::float8::text as default_coverage_value
      from units u join properties p on p.id = u.property_id join owners o on o.id = p.owner_id
      where o.slug = ${slug} and u.external_system_id = ${externalId}`,
  ).pipe(Effect.map(([row]) => row!))

/** Two accounts (`ba1` the default) and two buildings (`p1` on `ba1`, `p2`), each item with every field. */
const provisioned = (partner: RosterPartner, slug: string) =>
  Effect.gen(function* () {
    const accounts = yield* postBatch(partner, slug, "bank_accounts", [
      {
        external_system_id: "ba1",
        display_name: "Operating",
        routing_number: "021000021",
        account_number: "111122223333",
      },
      {
        external_system_id: "ba2",
        display_name: "Reserve",
        routing_number: "011000015",
        account_number: "444455556666",
      },
    ])
    assert.deepStrictEqual(accounts.meta, { created: 2, updated: 0, failed: 0 })
    const buildings = yield* postBatch(partner, slug, "properties", [
      {
        external_system_id: "p1",
        building_name: "Oak Court",
        address: ADDRESS,
        pms_type: "yardi",
        pms_property_id: "oak",
        default_coverage: { type: "multiplier", value: 2 },
        bank_account_external_id: "ba1",
      },
      {
        external_system_id: "p2",
        building_name: "Garden",
        address: { ...ADDRESS, line_one: "40 Elm St" },
        type: "single_family",
      },
    ])
    assert.deepStrictEqual(buildings.meta, { created: 2, updated: 0, failed: 0 })
  })

describe("an upsert writes only the fields it carries", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("moves the default account with only its identifier and default: true", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* provisioned(partner, slug)
        const before = yield* storedAccounts(slug)

        const moved = yield* postBatch(partner, slug, "bank_accounts", [
          { external_system_id: "ba2", default: true },
        ])
        assert.deepStrictEqual(moved.results, [
          {
            external_system_id: "ba2",
            action: "updated",
            display_name: "Reserve",
            routing_number: "011000015",
            account_number_last4: "6666",
            default: true,
          },
        ])
        const after = yield* storedAccounts(slug)
        assert.deepStrictEqual(
          after.map((a) => [a.external_system_id, a.is_default]),
          [
            ["ba1", false],
            ["ba2", true],
          ],
        )
        // Everything it did not carry is as stored, the sealed account number byte for byte.
        assert.deepStrictEqual(
          after.map(({ is_default: _, ...a }) => a),
          before.map(({ is_default: _, ...a }) => a),
        )
      }),
    )

    it.effect("updates one field of an account and keeps the others; creating still needs them all", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* provisioned(partner, slug)
        const renamed = yield* postBatch(partner, slug, "bank_accounts", [
          { external_system_id: "ba1", display_name: "Operating (new)" },
          { external_system_id: "ba3", default: true },
          { external_system_id: "ba4", display_name: "Payroll", routing_number: "021000021" },
        ])
        assert.deepStrictEqual(renamed.results, [
          {
            external_system_id: "ba1",
            action: "updated",
            display_name: "Operating (new)",
            routing_number: "021000021",
            account_number_last4: "3333",
            default: true,
          },
          {
            external_system_id: "ba3",
            action: "failed",
            errors: {
              display_name: ["is required"],
              routing_number: ["is required"],
              account_number: ["is required"],
            },
          },
          { external_system_id: "ba4", action: "failed", errors: { account_number: ["is required"] } },
        ])
        const stored = yield* storedAccounts(slug)
        assert.deepStrictEqual(
          stored.map((a) => [a.external_system_id, a.display_name, a.account_number_last4, a.is_default]),
          [
            ["ba1", "Operating (new)", "3333", true],
            ["ba2", "Reserve", "6666", false],
          ],
        )
      }),
    )

    it.effect("renames a building with only its identifier and building_name", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* provisioned(partner, slug)
        const before = yield* storedProperty(slug, "p2")
        const renamed = yield* postBatch(partner, slug, "properties", [
          { external_system_id: "p2", building_name: "Garden One" },
        ])
        assert.deepStrictEqual(renamed.results, [
          {
            external_system_id: "p2",
            action: "updated",
            building_name: "Garden One",
            address: { ...SHOWN_ADDRESS, line_one: "40 Elm Street" },
            type: "single_family",
            active: true,
          },
        ])
        assert.deepStrictEqual(yield* storedProperty(slug, "p2"), { ...before, building_name: "Garden One" })
      }),
    )

    it.effect("deactivates a building with only its identifier and active: false, and restores it", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* provisioned(partner, slug)
        const before = yield* storedProperty(slug, "p1")
        const deactivated = yield* postBatch(partner, slug, "properties", [
          { external_system_id: "p1", active: false },
        ])
        assert.deepStrictEqual(deactivated.results, [
          {
            external_system_id: "p1",
            action: "updated",
            building_name: "Oak Court",
            address: SHOWN_ADDRESS,
            type: "multifamily",
            active: false,
          },
        ])
        assert.deepStrictEqual(yield* storedProperty(slug, "p1"), { ...before, active: false })
        yield* postBatch(partner, slug, "properties", [{ external_system_id: "p1", active: true }])
        assert.deepStrictEqual(yield* storedProperty(slug, "p1"), before)
      }),
    )

    it.effect(
      "clears an optional building field with null and needs building_name and address to create",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* ownerWithPartner
          yield* provisioned(partner, slug)
          const answer = yield* postBatch(partner, slug, "properties", [
            {
              external_system_id: "p1",
              pms_property_id: null,
              bank_account_external_id: null,
              default_coverage: null,
            },
            { external_system_id: "p9", building_name: "Nowhere" },
            { external_system_id: "p10", address: ADDRESS },
            { external_system_id: "p11", active: false },
          ])
          assert.deepStrictEqual(
            answer.results.map((r) => [r.external_system_id, r.action, r.errors]),
            [
              ["p1", "updated", undefined],
              ["p9", "failed", { address: ["is required"] }],
              ["p10", "failed", { building_name: ["is required"] }],
              ["p11", "failed", { building_name: ["is required"], address: ["is required"] }],
            ],
          )
          const p1 = yield* storedProperty(slug, "p1")
          assert.deepStrictEqual(
            [p1.pms_type, p1.pms_property_id, p1.bank_account_external_id, p1.default_coverage_value],
            ["yardi", null, null, "1"],
          )
          const [{ count }] = (yield* query(
            (sql) => sql<Array<{ count: number }>>`
            select count(*)::int as count from properties p join owners o on o.id = p.owner_id where o.slug = ${slug}`,
          )) as unknown as [{ count: number }]
          assert.strictEqual(count, 2)
        }),
    )

    it.effect("matches by identifier before any rule that needs the address", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* provisioned(partner, slug)
        // p1 sent with p2's name and address: the identifier decides, so p1 moves rather than failing as p2.
        const answer = yield* postBatch(partner, slug, "properties", [
          {
            external_system_id: "p1",
            building_name: "Garden",
            address: { ...ADDRESS, line_one: "40 Elm St" },
          },
        ])
        assert.deepStrictEqual(
          answer.results.map((r) => [r.external_system_id, r.action, r.building_name]),
          [["p1", "updated", "Garden"]],
        )
        assert.strictEqual((yield* storedProperty(slug, "p1")).street, "40 Elm Street")
        assert.strictEqual((yield* storedProperty(slug, "p2")).building_name, "Garden")
      }),
    )

    it.effect("keeps a unit's sent name and address when an update omits them; null clears the name", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* ownerWithPartner
        yield* provisioned(partner, slug)
        const created = yield* postBatch(partner, slug, "units", [
          {
            external_system_id: "u1",
            property_external_id: "p1",
            name: "Penthouse",
            address: { line_one: "12 Oak Ct Apt 9", city: "Springfield", state: "IL", zip: "62701" },
            pms_unit_id: "oak-9",
          },
          {
            external_system_id: "u2",
            property_external_id: "p1",
            address: { line_one: "12 Oak Ct Apt 4", city: "Springfield", state: "IL", zip: "62701" },
          },
        ])
        assert.deepStrictEqual(
          created.results.map((r) => [r.external_system_id, r.action, r.name]),
          [
            ["u1", "created", "Penthouse"],
            ["u2", "created", "4"],
          ],
        )

        const covered = yield* postBatch(partner, slug, "units", [
          {
            external_system_id: "u1",
            property_external_id: "p1",
            default_coverage: { type: "multiplier", value: 3 },
          },
        ])
        assert.deepStrictEqual(covered.results, [
          { external_system_id: "u1", action: "updated", name: "Penthouse", property_external_id: "p1" },
        ])
        assert.deepStrictEqual(yield* storedUnit(slug, "u1"), {
          name: "Penthouse",
          line_one: "12 Oak Ct Apt 9",
          pms_unit_id: "oak-9",
          default_coverage_value: "3",
        })

        // A new address leaves a sent name alone; a derived name follows the address.
        const moved = yield* postBatch(partner, slug, "units", [
          {
            external_system_id: "u1",
            property_external_id: "p1",
            address: { line_one: "12 Oak Ct Apt 10", city: "Springfield", state: "IL", zip: "62701" },
          },
          {
            external_system_id: "u2",
            property_external_id: "p1",
            address: { line_one: "12 Oak Ct Apt 5", city: "Springfield", state: "IL", zip: "62701" },
          },
        ])
        assert.deepStrictEqual(
          moved.results.map((r) => [r.external_system_id, r.name]),
          [
            ["u1", "Penthouse"],
            ["u2", "5"],
          ],
        )
        assert.strictEqual((yield* storedUnit(slug, "u1")).default_coverage_value, "3")

        const cleared = yield* postBatch(partner, slug, "units", [
          { external_system_id: "u1", property_external_id: "p1", name: null },
        ])
        assert.deepStrictEqual(cleared.results[0]!.name, "10")
      }),
    )

    it.effect("updates an owner with only its external_org_id and the fields sent; null clears", () =>
      Effect.gen(function* () {
        const { partner, externalOrgId } = yield* ownerWithPartner
        const first = yield* postOwner(partner, {
          external_org_id: externalOrgId,
          max_coverage_amount_cents: 500_000,
          embedded_frame_ancestors: ["https://pms.example.com"],
          guarantor_coverage_capable: true,
        })
        assert.strictEqual(first.status, 200, first.text)
        const activated = yield* postOwner(partner, {
          external_org_id: externalOrgId,
          purchase_flow_enabled: true,
        })
        assert.strictEqual(activated.status, 200, activated.text)
        assert.deepStrictEqual(activated.body.property_owner, {
          ...first.body.property_owner,
          purchase_flow_enabled: true,
          active: true,
        })
        const cleared = yield* postOwner(partner, {
          external_org_id: externalOrgId,
          max_coverage_amount_cents: null,
          embedded_frame_ancestors: null,
        })
        assert.strictEqual(cleared.status, 200, cleared.text)
        assert.deepStrictEqual(cleared.body.property_owner, {
          ...activated.body.property_owner,
          max_coverage_amount_cents: null,
          embedded_frame_ancestors: [],
        })
      }),
    )
  })
})

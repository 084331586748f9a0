import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { createOwnerThroughApi, postBatch, query, type RosterPartner, rosterPartner } from "./Roster.ts"

export const SEED = { line_one: "12 Oak Ct", city: "Springfield", state: "IL", zip: "62701" }

export let owners = 0
/**
 * A fresh owner created through the API by a fresh partner, with the building `prop-1` (seeded at 12 Oak Ct)
 * of `type`.
 */
export const building = (type?: string, address: Record<string, unknown> = SEED) =>
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

export const units = (partner: RosterPartner, slug: string, items: ReadonlyArray<unknown>) =>
  postBatch(partner, slug, "units", items)

export const unit = (externalId: string, extra: Record<string, unknown> = {}) => ({
  external_system_id: externalId,
  property_external_id: "prop-1",
  ...extra,
})

/** An applied unit's result as the contract shows it. */
export const shown = (externalId: string, action: "created" | "updated", name: string) => ({
  external_system_id: externalId,
  action,
  name,
  property_external_id: "prop-1",
})

export const at = (line_one: string, extra: Record<string, unknown> = {}) => ({
  address: { line_one, city: "Springfield", state: "IL", zip: "62701", ...extra },
})

export interface StoredUnit {
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
export const stored = (slug: string) =>
  query(
    (sql) => sql<Array<StoredUnit>>`
      select u.id, u.external_system_id, u.name, u.line_one, u.line_two, u.pms_unit_id, u.default_coverage_type,
             u.default_coverage_value::float8::text as default_coverage_value
      from units u join properties p on p.id = u.property_id join owners o on o.id = p.owner_id
      where o.slug = ${slug} and p.external_system_id = 'prop-1' order by u.id`,
  ).pipe(Effect.map((rows) => [...rows]))

export const names = (slug: string) =>
  Effect.map(stored(slug), (rows) => rows.map((r) => [r.external_system_id, r.name]))

/** A unit the service made itself, not yet linked to an identifier. */
export const serviceUnit = (slug: string, name: string, pmsUnitId: string | null = null) =>
  query(
    (sql) => sql<Array<{ id: string }>>`
      insert into units (property_id, name, pms_unit_id)
      select p.id, ${name}, ${pmsUnitId} from properties p join owners o on o.id = p.owner_id
      where o.slug = ${slug} and p.external_system_id = 'prop-1'
      returning id`,
  ).pipe(Effect.map(([row]) => row!.id))

export const buildingRow = (slug: string) =>
  query(
    (sql) => sql<Array<{ id: string; street: string; street_key: string }>>`
      select p.id, p.street, p.street_key from properties p join owners o on o.id = p.owner_id
      where o.slug = ${slug} and p.external_system_id = 'prop-1'`,
  ).pipe(Effect.map(([row]) => row!))

export const NOT_DERIVABLE = { name: ["unit name required and not derivable"] }

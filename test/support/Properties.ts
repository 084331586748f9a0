import { Effect } from "effect"
import { normalizeStreetLine } from "../../backend/roster/Address.ts"
import { createOwnerThroughApi, postBatch, query, type RosterPartner, rosterPartner } from "./Roster.ts"

export let owners = 0
/** A fresh owner created through the API by a fresh partner. */
export const ownerWithPartner = (extra: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const partner = yield* rosterPartner()
    owners++
    const externalOrgId = `org-property-${owners}`
    const owner = { external_org_id: externalOrgId, name: `Property Owner ${owners}`, ...extra }
    const slug = yield* createOwnerThroughApi(partner, owner)
    // The default policy holder of the owner's buildings.
    return { partner, slug, externalOrgId, policyHolder: `${String(owner.name)}, LLC` }
  })

export const MAIN_ADDRESS = {
  line_one: "123 N Main St Apt 4",
  city: "Springfield",
  state: "Illinois",
  zip: "62701-1234",
}
export const MAIN_SHOWN = {
  line_one: "123 North Main Street",
  city: "Springfield",
  state: "IL",
  zip: "62701",
}

export const property = (externalId: string, extra: Record<string, unknown> = {}) => ({
  external_system_id: externalId,
  building_name: "Main Tower",
  address: MAIN_ADDRESS,
  ...extra,
})

/** An applied property's result as the contract shows it. */
export const shown = (
  externalId: string,
  action: "created" | "updated",
  extra: Record<string, unknown> = {},
) => ({
  external_system_id: externalId,
  action,
  building_name: "Main Tower",
  address: MAIN_SHOWN,
  type: "multifamily",
  active: true,
  ...extra,
})

export const properties = (partner: RosterPartner, slug: string, items: ReadonlyArray<unknown>) =>
  postBatch(partner, slug, "properties", items)

export interface StoredProperty {
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
export const stored = (slug: string) =>
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

export const storedOne = (slug: string, externalId: string) =>
  Effect.map(stored(slug), (rows) => rows.find((r) => r.external_system_id === externalId)!)

/** A building the service made itself (an owner with an existing relationship), not yet linked to an identifier. */
export const serviceBuilding = (
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

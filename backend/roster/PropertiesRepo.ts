import { Effect } from "effect"
import { Db } from "../platform/Db.ts"

export interface PropertyRow {
  readonly id: string
  readonly external_system_id: string | null
  readonly building_name: string
  readonly street_key: string
  readonly street: string
  readonly city: string
  readonly state: string
  readonly zip: string
  readonly type: string
  readonly policy_holder_name: string | null
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly default_coverage_type: string
  readonly default_coverage_value: string
  readonly bank_account_id: string | null
  readonly active: boolean
  readonly renter_guarantee_enabled: boolean
  readonly street_derived: boolean
  readonly address_locked: boolean
}

export interface UnitRow {
  readonly id: string
  readonly property_id: string
  readonly external_system_id: string | null
  readonly name: string
  /** The service derived the name (from the address or PMS code); false when the partner sent it. */
  readonly name_derived: boolean
  readonly line_one: string | null
  readonly line_two: string | null
  readonly city: string | null
  readonly state: string | null
  readonly zip: string | null
  readonly pms_unit_id: string | null
  readonly default_coverage_type: string | null
  readonly default_coverage_value: string | null
}

/** `col = v.col, ...` for a multi-row update from a `v` row set; the columns are constants of this file. */
const assignments = (columns: ReadonlyArray<string>) => columns.map((c) => `${c} = v.${c}`).join(", ")

/** The roster's SQL of an owner's properties (buildings), their units and their addresses. */
export const makePropertiesRepo = Effect.gen(function* () {
  const db = yield* Db
  return {
    properties: (ownerId: string) =>
      db.query(
        (sql) => sql<Array<PropertyRow>>`select * from properties where owner_id = ${ownerId} order by id`,
      ),
    upsertProperties: (
      ownerId: string,
      rows: ReadonlyArray<Omit<PropertyRow, "id"> & { readonly id?: string }>,
    ) =>
      rows.length === 0
        ? Effect.succeed([] as Array<{ id: string; external_system_id: string | null }>)
        : db.query((sql) => {
            const columns = [
              "external_system_id",
              "building_name",
              "street_key",
              "street",
              "city",
              "state",
              "zip",
              "type",
              "policy_holder_name",
              "pms_type",
              "pms_property_id",
              "default_coverage_type",
              "default_coverage_value",
              "bank_account_id",
              "active",
              "renter_guarantee_enabled",
            ] as const
            const fresh = rows.filter((r) => r.id === undefined).map((r) => ({ ...r, owner_id: ownerId }))
            const changed = rows.filter((r) => r.id !== undefined)
            return Promise.all([
              fresh.length === 0
                ? Promise.resolve([])
                : sql<Array<{ id: string; external_system_id: string | null }>>`
                    insert into properties ${sql(fresh, "owner_id", ...columns)} returning id, external_system_id`,
              changed.length === 0
                ? Promise.resolve([])
                : sql`
                    update properties p set ${sql.unsafe(assignments(columns))}, updated_at = now()
                    from (select * from jsonb_populate_recordset(null::properties, ${sql.json(changed as never)})) v
                    where p.id = v.id`,
            ]).then(([inserted]) => inserted)
          }),

    units: (propertyIds: ReadonlyArray<string>) =>
      propertyIds.length === 0
        ? Effect.succeed([] as Array<UnitRow>)
        : db.query(
            (sql) => sql<Array<UnitRow>>`
              select id, property_id, external_system_id, name, name_derived, line_one, line_two, city, state, zip,
                     pms_unit_id, default_coverage_type, default_coverage_value
              from units where property_id = any(${sql.array([...propertyIds.map(Number)])}::bigint[]) order by id`,
          ),
    upsertUnits: (rows: ReadonlyArray<Omit<UnitRow, "id"> & { readonly id?: string }>) =>
      rows.length === 0
        ? Effect.void
        : db.query((sql) => {
            const fresh = rows.filter((r) => r.id === undefined)
            const changed = rows.filter((r) => r.id !== undefined)
            const columns = [
              "property_id",
              "external_system_id",
              "name",
              "name_derived",
              "line_one",
              "line_two",
              "city",
              "state",
              "zip",
              "pms_unit_id",
              "default_coverage_type",
              "default_coverage_value",
            ] as const
            return Promise.all([
              fresh.length === 0 ? Promise.resolve() : sql`insert into units ${sql(fresh, ...columns)}`,
              changed.length === 0
                ? Promise.resolve()
                : sql`
                    update units u set ${sql.unsafe(assignments(columns))}, updated_at = now()
                    from (select * from jsonb_populate_recordset(null::units, ${sql.json(changed as never)})) v
                    where u.id = v.id`,
            ]).then(() => undefined)
          }),
    updatePropertyStreets: (
      rows: ReadonlyArray<{ readonly id: string; readonly street: string; readonly street_key: string }>,
    ) =>
      rows.length === 0
        ? Effect.void
        : db.query(
            (sql) => sql`
              update properties p set street = v.street, street_key = v.street_key, street_derived = true,
                updated_at = now()
              from (values ${sql(rows.map((r) => [r.id, r.street, r.street_key]))}) as v (id, street, street_key)
              where p.id = v.id::bigint`,
          ),
    /** An operator's correction: the address as given, and derivation from units stops for good. */
    correctAddress: (
      id: string,
      address: {
        readonly street: string
        readonly street_key: string
        readonly city: string
        readonly state: string
        readonly zip: string
      },
    ) =>
      db.query(
        (sql) => sql`
          update properties set street = ${address.street}, street_key = ${address.street_key},
            city = ${address.city}, state = ${address.state}, zip = ${address.zip}, address_locked = true,
            updated_at = now()
          where id = ${id}`,
      ),
    recordDisagreements: (
      rows: ReadonlyArray<{
        readonly property_id: string
        readonly stored_street: string
        readonly derived_street: string
      }>,
    ) =>
      rows.length === 0
        ? Effect.void
        : db.query(
            (sql) =>
              sql`insert into address_disagreements ${sql(rows as never, "property_id", "stored_street", "derived_street")}`,
          ),
  }
})

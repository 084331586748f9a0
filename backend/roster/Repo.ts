import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { OwnerRow } from "./Domain.ts"
import { type AuditEntry, recordAudit } from "../audit/Audit.ts"

/** Serializes roster writes per owner across processes, so a batch reads and writes a consistent roster. */
const ROSTER_LOCK = 7_239_100
/** Serializes the choice of a slug among owners whose names give the same one. */
const SLUG_LOCK = 7_239_101

export interface BankAccountRow {
  readonly id: string
  readonly external_system_id: string
  readonly display_name: string
  readonly routing_number: string
  readonly account_number_last4: string
}

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

/** The columns of an `OwnerRow`. */
const OWNER_COLUMNS = [
  "id",
  "slug",
  "name",
  "external_org_id",
  "managed_by_service",
  "purchase_flow_enabled",
  "max_coverage_amount_cents",
  "embedded_frame_ancestors",
  "guarantor_coverage_capable",
  "default_bank_account_id",
] as const

/** The columns of an `OwnerRow` qualified for a query that calls the owners table `o`. */
const OWNER_SELECT = OWNER_COLUMNS.map((column) => `o.${column}`).join(", ")

/** `col = v.col, ...` for a multi-row update from a `v` row set; the columns are constants of this file. */
const assignments = (columns: ReadonlyArray<string>) => columns.map((c) => `${c} = v.${c}`).join(", ")

export class RosterRepo extends Context.Service<RosterRepo>()("partner-service/roster/RosterRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      lockOwner: (ownerId: string) =>
        db.query((sql) => sql`select pg_advisory_xact_lock(${ROSTER_LOCK}, ${Number(ownerId)})`),
      /** Serializes first writes of one external_org_id (two requests creating the same owner at once). */
      lockExternalOrgId: (externalOrgId: string) =>
        db.query((sql) => sql`select pg_advisory_xact_lock(${ROSTER_LOCK}, hashtext(${externalOrgId}))`),
      /** Held until commit, so the next owner of that name sees this one's slug taken. */
      lockSlug: (base: string) =>
        db.query((sql) => sql`select pg_advisory_xact_lock(${SLUG_LOCK}, hashtext(${base}))`),
      ownerBySlug: (slug: string) =>
        db
          .query((sql) => sql<Array<OwnerRow>>`select ${sql(OWNER_COLUMNS)} from owners where slug = ${slug}`)
          .pipe(Effect.map(([row]) => row)),
      ownerByExternalOrgId: (externalOrgId: string) =>
        db
          .query(
            (sql) =>
              sql<
                Array<OwnerRow>
              >`select ${sql(OWNER_COLUMNS)} from owners where external_org_id = ${externalOrgId}`,
          )
          .pipe(Effect.map(([row]) => row)),
      slugsLike: (base: string) =>
        db
          .query(
            (sql) => sql<Array<{ slug: string }>>`
              select slug from owners where slug = ${base} or slug ~ ${`^${base}-[0-9]+$`}`,
          )
          .pipe(Effect.map((rows) => new Set(rows.map((r) => r.slug)))),
      insertOwner: (owner: {
        readonly slug: string
        readonly name: string
        readonly external_org_id: string | null
        readonly managed_by_service: boolean
        readonly max_coverage_amount_cents: number | null
        readonly embedded_frame_ancestors: ReadonlyArray<string>
        readonly guarantor_coverage_capable: boolean
      }) =>
        db
          .query(
            (sql) => sql<Array<OwnerRow>>`
              insert into owners (slug, name, external_org_id, managed_by_service, max_coverage_amount_cents,
                                  embedded_frame_ancestors, guarantor_coverage_capable)
              values (${owner.slug}, ${owner.name}, ${owner.external_org_id}, ${owner.managed_by_service},
                      ${owner.max_coverage_amount_cents}, ${sql.array([...owner.embedded_frame_ancestors])},
                      ${owner.guarantor_coverage_capable})
              returning ${sql(OWNER_COLUMNS)}`,
          )
          .pipe(Effect.map(([row]) => row!)),
      updateOwner: (owner: OwnerRow) =>
        db.query(
          (sql) => sql`
            update owners set name = ${owner.name}, purchase_flow_enabled = ${owner.purchase_flow_enabled},
              max_coverage_amount_cents = ${owner.max_coverage_amount_cents},
              embedded_frame_ancestors = ${sql.array([...owner.embedded_frame_ancestors])},
              guarantor_coverage_capable = ${owner.guarantor_coverage_capable},
              default_bank_account_id = ${owner.default_bank_account_id}, updated_at = now()
            where id = ${owner.id}`,
        ),
      /** The buildings (PMS property ids) a client is granted for an owner; undefined: every building. */
      grantedBuildings: (ownerId: string, clientId: string) =>
        db
          .query(
            (sql) => sql<Array<{ buildings: Array<string> | null }>>`
              select buildings from client_owner_grants where owner_id = ${ownerId} and client_id = ${clientId}`,
          )
          .pipe(Effect.map(([row]) => row?.buildings ?? undefined)),
      /**
       * For each (client, PMS property id) asked, the owners granted to the client that have a building with that
       * id, by slug; keyed `JSON.stringify([clientId, pmsPropertyId])`.
       */
      ownersWithProperties: (
        asked: ReadonlyArray<{ readonly clientId: string; readonly pmsPropertyId: string }>,
      ) =>
        asked.length === 0
          ? Effect.succeed(new Map<string, Array<OwnerRow>>())
          : db
              .query(
                (sql) => sql<
                  Array<OwnerRow & { readonly asked_client: string; readonly asked_property: string }>
                >`
                  select q.client_id as asked_client, q.pms_property_id as asked_property, ${sql.unsafe(OWNER_SELECT)}
                  from unnest(${sql.array(asked.map((a) => a.clientId))}::text[],
                              ${sql.array(asked.map((a) => a.pmsPropertyId))}::text[]) as q(client_id, pms_property_id)
                  join client_owner_grants g on g.client_id = q.client_id
                    and (g.buildings is null or q.pms_property_id = any(g.buildings))
                  join owners o on o.id = g.owner_id
                  where exists (
                    select 1 from properties p where p.owner_id = g.owner_id and p.pms_property_id = q.pms_property_id)
                  order by o.slug`,
              )
              .pipe(
                Effect.map((rows) => {
                  const out = new Map<string, Array<OwnerRow>>()
                  for (const { asked_client, asked_property, ...owner } of rows) {
                    const key = JSON.stringify([asked_client, asked_property])
                    out.set(key, [...(out.get(key) ?? []), owner])
                  }
                  return out
                }),
              ),
      grant: (ownerId: string, clientId: string, buildings: ReadonlyArray<string> | null) =>
        db.query(
          (sql) => sql`
            insert into client_owner_grants (client_id, owner_id, buildings)
            values (${clientId}, ${ownerId}, ${buildings === null ? null : sql.array([...buildings])})
            on conflict (client_id, owner_id) do update set buildings = excluded.buildings`,
        ),

      bankAccounts: (ownerId: string) =>
        db.query(
          (sql) => sql<Array<BankAccountRow>>`
            select id, external_system_id, display_name, routing_number, account_number_last4
            from bank_accounts where owner_id = ${ownerId} order by id`,
        ),
      insertBankAccounts: (
        ownerId: string,
        rows: ReadonlyArray<Omit<BankAccountRow, "id"> & { readonly account_number_sealed: Buffer }>,
      ) =>
        rows.length === 0
          ? Effect.succeed([] as Array<{ id: string; external_system_id: string }>)
          : db.query(
              (sql) => sql<Array<{ id: string; external_system_id: string }>>`
                insert into bank_accounts ${sql(
                  rows.map((r) => ({ ...r, owner_id: ownerId })),
                  "owner_id",
                  "external_system_id",
                  "display_name",
                  "routing_number",
                  "account_number_sealed",
                  "account_number_last4",
                )}
                returning id, external_system_id`,
            ),
      /** Each account's fields; an account whose `account_number_sealed` is undefined keeps its stored number. */
      updateBankAccounts: (
        rows: ReadonlyArray<
          Omit<BankAccountRow, "external_system_id"> & { readonly account_number_sealed: Buffer | undefined }
        >,
      ) =>
        rows.length === 0
          ? Effect.void
          : db.query(
              (sql) => sql`
                update bank_accounts b set display_name = v.display_name, routing_number = v.routing_number,
                  account_number_sealed = coalesce(decode(nullif(v.sealed, ''), 'base64'), b.account_number_sealed),
                  account_number_last4 = v.last4, updated_at = now()
                from (values ${sql(
                  rows.map((r) => [
                    r.id,
                    r.display_name,
                    r.routing_number,
                    r.account_number_sealed?.toString("base64") ?? "",
                    r.account_number_last4,
                  ]),
                )}) as v (id, display_name, routing_number, sealed, last4)
                where b.id = v.id::bigint`,
            ),

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
      /** A line of the operators' append-only audit log. */
      audit: (entry: AuditEntry) => recordAudit(db, entry),
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
  }),
}) {
  static readonly layer = Layer.effect(RosterRepo, RosterRepo.make)
}

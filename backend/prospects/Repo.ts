import { Context, Effect, Layer } from "effect"
import { Db, type Sql } from "../platform/Db.ts"
import type { LatestCoverage, OfferedProduct } from "./Domain.ts"

/** Serializes writes of one (source, source_prospect_id), including the first two racing to create it. */
const PROSPECT_LOCK = 7_239_200

/** A stored prospect; bigints as strings, dates as `YYYY-MM-DD`, the timestamp as ISO 8601 UTC. */
export interface ProspectRow {
  readonly id: string
  readonly owner_id: string
  readonly source: string
  readonly source_prospect_id: string
  readonly status: "incomplete" | "processing" | "ready" | "error"
  readonly email: string | null
  readonly phone: string | null
  readonly first_name: string | null
  readonly last_name: string | null
  readonly birthdate: string | null
  readonly lease_start_date: string | null
  readonly lease_end_date: string | null
  readonly monthly_rent_cents: string | null
  readonly deposit_amount_cents: string | null
  readonly screening_result: string | null
  readonly employment_status: string | null
  readonly yearly_income: string | null
  readonly has_ssn: boolean | null
  readonly citizenship: string | null
  readonly education_level: string | null
  readonly terms_accepted_at: string | null
  readonly authorized_members: ReadonlyArray<Record<string, unknown>> | null
  readonly social_security_number_sealed: Buffer | null
  readonly guarantor_coverage: boolean
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly pms_unit_id: string | null
  readonly pms_prospect_id: string | null
  readonly property_external_id: string | null
  readonly unit_external_id: string | null
  readonly property_id: string | null
  readonly unit_id: string | null
  readonly version: number
  readonly decided_version: number | null
  readonly effective_coverage_amount_cents: string | null
  readonly sdi_ineligibility_reasons: Array<string> | null
  readonly cd_ineligibility_reasons: Array<string> | null
  readonly rg_eligibility_status: "eligible" | "ineligible" | null
  readonly rg_ineligibility_reasons: Array<string> | null
  readonly eligible: boolean | null
  readonly error_reason: string | null
  /** ISO 8601: the time of the newest inbound event applied. */
  readonly last_event_at: string | null
  /** Written by the enrollment journey only (never by a partner write); absent on a row being written. */
  readonly offered_products?: ReadonlyArray<OfferedProduct>
  readonly percent_savings?: number | null
  readonly application_submitted?: boolean
  readonly latest_coverage?: LatestCoverage | null
}

/** The columns the enrollment journey writes on a prospect, as a row carries them. */
export const enrollmentSummaryOf = (row: ProspectRow | undefined) =>
  row === undefined
    ? {}
    : {
        offered_products: row.offered_products ?? [],
        percent_savings: row.percent_savings ?? null,
        application_submitted: row.application_submitted ?? false,
        latest_coverage: row.latest_coverage ?? null,
      }

/** The columns a prospect write sets (everything but the identity and timestamps). */
export type ProspectWrite = Omit<ProspectRow, "id">

export const WRITE_COLUMNS = [
  "owner_id",
  "source",
  "source_prospect_id",
  "status",
  "email",
  "phone",
  "first_name",
  "last_name",
  "birthdate",
  "lease_start_date",
  "lease_end_date",
  "monthly_rent_cents",
  "deposit_amount_cents",
  "screening_result",
  "employment_status",
  "yearly_income",
  "has_ssn",
  "citizenship",
  "education_level",
  "terms_accepted_at",
  "authorized_members",
  "social_security_number_sealed",
  "guarantor_coverage",
  "pms_type",
  "pms_property_id",
  "pms_unit_id",
  "pms_prospect_id",
  "property_external_id",
  "unit_external_id",
  "property_id",
  "unit_id",
  "version",
  "decided_version",
  "effective_coverage_amount_cents",
  "sdi_ineligibility_reasons",
  "cd_ineligibility_reasons",
  "rg_eligibility_status",
  "rg_ineligibility_reasons",
  "eligible",
  "error_reason",
  "last_event_at",
] as const satisfies ReadonlyArray<keyof ProspectWrite>

/** Every written column from the proposed row, for `on conflict do update`. */
const UPSERT_SET = WRITE_COLUMNS.filter((column) => column !== "source" && column !== "source_prospect_id")
  .map((column) => `${column} = excluded.${column}`)
  .join(", ")

/** What `resolveAll` resolves for one prospect. */
export interface BuildingRefs {
  readonly ownerId: string
  /** A managed owner's buildings count only if granted to this client; null: every building of the owner. */
  readonly grantedTo: string | null
  readonly row: Pick<
    ProspectWrite,
    "property_external_id" | "pms_property_id" | "unit_external_id" | "pms_unit_id"
  >
}

export interface ResolvedRefs {
  readonly property_id: string | null
  readonly unit_id: string | null
}

export interface ProspectKey {
  readonly source: string
  readonly source_prospect_id: string
}

export const selectProspects = (sql: Sql, where: ReturnType<Sql>) => sql<Array<ProspectRow>>`
  select id, owner_id, source, source_prospect_id, status, email, phone, first_name, last_name,
         to_char(birthdate, 'YYYY-MM-DD') as birthdate,
         to_char(lease_start_date, 'YYYY-MM-DD') as lease_start_date,
         to_char(lease_end_date, 'YYYY-MM-DD') as lease_end_date,
         monthly_rent_cents, deposit_amount_cents, screening_result, employment_status, yearly_income, has_ssn,
         citizenship, education_level,
         replace(to_char(terms_accepted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '.000Z', 'Z')
           as terms_accepted_at,
         authorized_members, social_security_number_sealed, guarantor_coverage, pms_type, pms_property_id,
         pms_unit_id, pms_prospect_id, property_external_id, unit_external_id, property_id, unit_id, version,
         decided_version, effective_coverage_amount_cents, sdi_ineligibility_reasons, cd_ineligibility_reasons,
         rg_eligibility_status, rg_ineligibility_reasons, eligible, error_reason,
         to_char(last_event_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as last_event_at,
         offered_products, percent_savings::float8 as percent_savings, application_submitted, latest_coverage
  from prospects ${where}`

const COLUMN_LIST = WRITE_COLUMNS.join(", ")

/**
 * Rows as one JSON array of their written columns, as `jsonb_populate_recordset` reads them (bytea as `\x` hex):
 * one parameter whatever the number of rows, so a batch's upsert is one prepared statement at every size. A null
 * column is left out: over a null base record a missing key reads as null, and most of a prospect's columns are
 * null, so Postgres has far fewer keys to parse and look up.
 */
const recordset = (rows: ReadonlyArray<ProspectWrite>) =>
  rows.map((row) => {
    const record: Record<string, unknown> = {}
    for (const column of WRITE_COLUMNS) {
      const value = row[column]
      if (value !== null) record[column] = value
    }
    const sealed = row.social_security_number_sealed
    if (sealed !== null) record.social_security_number_sealed = `\\x${sealed.toString("hex")}`
    return record
  })

/** The row as parameters: the members array goes to its jsonb column as JSON, not as a Postgres array. */
const writable = (sql: Sql, row: ProspectWrite): Record<string, unknown> =>
  // Object.assign, not a spread plus a key: V8 copies the latter property by property (slow for 40 columns).
  Object.assign({}, row, {
    authorized_members: row.authorized_members === null ? null : sql.json(row.authorized_members as never),
  })

/** A building or unit a prospect resolved to, with what eligibility reads of it. */
export interface ResolvedProperty {
  readonly id: string
  readonly external_system_id: string | null
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly active: boolean
  readonly renter_guarantee_enabled: boolean
  readonly default_coverage_value: string
}

export interface ResolvedUnit {
  readonly id: string
  readonly external_system_id: string | null
  readonly default_coverage_value: string | null
}

export class ProspectsRepo extends Context.Service<ProspectsRepo>()(
  "partner-service/prospects/ProspectsRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db

      const findBy = (where: (sql: Sql) => ReturnType<Sql>) =>
        db.query((sql) => selectProspects(sql, where(sql))).pipe(Effect.map(([row]) => row))

      return {
        lock: (source: string, sourceProspectId: string) =>
          db.query(
            (sql) =>
              sql`select pg_advisory_xact_lock(${PROSPECT_LOCK}, hashtext(${source} || '/' || ${sourceProspectId}))`,
          ),
        /** The locks of several prospects, taken in one order (the database's, as `keysByEmail` orders them). */
        lockAll: (keys: ReadonlyArray<ProspectKey>) =>
          db.query(
            (sql) => sql`
              select count(pg_advisory_xact_lock(${PROSPECT_LOCK}, hashtext(k.source || '/' || k.source_prospect_id)))
              from (
                select source, source_prospect_id
                from unnest(${sql.array(keys.map((k) => k.source))}::text[],
                            ${sql.array(keys.map((k) => k.source_prospect_id))}::text[]) as k(source, source_prospect_id)
                order by source, source_prospect_id
              ) k`,
          ),
        /** The stored prospects among these keys. */
        findAll: (keys: ReadonlyArray<ProspectKey>) =>
          db.query((sql) =>
            selectProspects(
              sql,
              sql`where (source, source_prospect_id) in (
                select * from unnest(${sql.array(keys.map((k) => k.source))}::text[],
                                     ${sql.array(keys.map((k) => k.source_prospect_id))}::text[]))`,
            ),
          ),
        /** Inserts or overwrites each prospect by its key, in one statement; their ids. */
        upsertAll: (
          rows: ReadonlyArray<ProspectWrite>,
        ): Effect.Effect<ReadonlyArray<{ id: string } & ProspectKey>> =>
          rows.length === 0
            ? Effect.succeed([])
            : db.query(
                (sql) => sql<Array<{ id: string; source: string; source_prospect_id: string }>>`
                  insert into prospects (${sql.unsafe(COLUMN_LIST)})
                  select ${sql.unsafe(COLUMN_LIST)} from jsonb_populate_recordset(null::prospects, ${sql.json(recordset(rows) as never)})
                  on conflict (source, source_prospect_id) do update set ${sql.unsafe(UPSERT_SET)}, updated_at = now()
                  returning id, source, source_prospect_id`,
              ),
        find: (source: string, sourceProspectId: string) =>
          findBy((sql) => sql`where source = ${source} and source_prospect_id = ${sourceProspectId}`),
        findById: (id: string) => findBy((sql) => sql`where id = ${id}`),
        /** The owner's prospect by its key; undefined when there is none, or it is another owner's. */
        findOwned: (slug: string, source: string, sourceProspectId: string) =>
          findBy(
            (sql) => sql`
              where source = ${source} and source_prospect_id = ${sourceProspectId}
                and owner_id = (select id from owners where slug = ${slug})`,
          ),
        insert: (row: ProspectWrite) =>
          db
            .query(
              (sql) => sql<Array<{ id: string }>>`
              insert into prospects ${sql(writable(sql, row) as never, WRITE_COLUMNS)} returning id`,
            )
            .pipe(Effect.map(([inserted]) => inserted!.id)),
        update: (id: string, row: ProspectWrite) =>
          db.query(
            (sql) => sql`
            update prospects set ${sql(writable(sql, row) as never, WRITE_COLUMNS)}, updated_at = now()
            where id = ${id}`,
          ),
        /** The building a prospect names: by the partner's id, else by PMS id (undefined when none or several). */
        resolveProperty: (
          ownerId: string,
          ref: { readonly externalId: string | null; readonly pmsPropertyId: string | null },
        ) =>
          db
            .query(
              (sql) => sql<Array<ResolvedProperty>>`
              select id, external_system_id, pms_type, pms_property_id, active, renter_guarantee_enabled,
                     default_coverage_value
              from properties
              where owner_id = ${ownerId}
                and ${
                  ref.externalId !== null
                    ? sql`external_system_id = ${ref.externalId}`
                    : sql`pms_property_id = ${ref.pmsPropertyId}`
                }
              limit 2`,
            )
            .pipe(Effect.map((rows) => (rows.length === 1 ? rows[0] : undefined))),
        /**
         * The building and unit each prospect's references name on its owner's roster now, if exactly one each (the
         * partner's id first, else the PMS id); with `grantedTo`, a building of a managed owner counts only if that
         * client was granted it. One result per reference, in order.
         */
        resolveAll: (refs: ReadonlyArray<BuildingRefs>): Effect.Effect<ReadonlyArray<ResolvedRefs>> =>
          refs.length === 0
            ? Effect.succeed([])
            : db.query(
                (sql) => sql<Array<ResolvedRefs>>`
                  select case when allowed.ok then named.id end as property_id,
                         case when allowed.ok then unit.id end as unit_id
                  from unnest(${sql.array(refs.map((r) => r.ownerId))}::bigint[],
                              ${sql.array(refs.map((r) => r.grantedTo))}::text[],
                              ${sql.array(refs.map((r) => r.row.property_external_id))}::text[],
                              ${sql.array(refs.map((r) => r.row.pms_property_id))}::text[],
                              ${sql.array(refs.map((r) => r.row.unit_external_id))}::text[],
                              ${sql.array(refs.map((r) => r.row.pms_unit_id))}::text[])
                    with ordinality as r(owner_id, granted_to, property_ext, property_pms, unit_ext, unit_pms, i)
                  left join lateral (
                    select (array_agg(c.id))[1] as id, (array_agg(c.pms_property_id))[1] as pms_property_id,
                           count(*) as n
                    from (select id, pms_property_id from properties
                          where owner_id = r.owner_id
                            and case when r.property_ext is not null then external_system_id = r.property_ext
                                     else pms_property_id = r.property_pms end
                          limit 2) c
                  ) named on named.n = 1
                  left join client_owner_grants g on g.owner_id = r.owner_id and g.client_id = r.granted_to
                  cross join lateral (
                    select r.granted_to is null or g.buildings is null
                           or coalesce(named.pms_property_id = any(g.buildings), false) as ok
                  ) allowed
                  left join lateral (
                    select (array_agg(c.id))[1] as id, count(*) as n
                    from (select id from units
                          where property_id = named.id
                            and case when r.unit_ext is not null then external_system_id = r.unit_ext
                                     else pms_unit_id = r.unit_pms end
                          limit 2) c
                  ) unit on unit.n = 1
                  order by r.i`,
              ),
        ownerSlug: (ownerId: string) =>
          db
            .query((sql) => sql<Array<{ slug: string }>>`select slug from owners where id = ${ownerId}`)
            .pipe(Effect.map(([row]) => row!.slug)),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(ProspectsRepo, ProspectsRepo.make)
}

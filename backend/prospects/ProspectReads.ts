import { Context, Effect, Layer } from "effect"
import type { FoundRow } from "../contract/Search.ts"
import { Db, type Sql } from "../platform/Db.ts"

export interface ProspectRecordRow {
  readonly id: string
  readonly owner_slug: string
  readonly owner_name: string
  readonly source: string
  readonly source_prospect_id: string
  readonly status: string
  readonly version: number
  readonly fields: Record<string, unknown>
  readonly created_at: Date
  readonly updated_at: Date
}

/** Columns of a prospect the page lists as its fields: everything but keys, bookkeeping and the sealed SSN. */
const NOT_FIELDS = [
  "id",
  "owner_id",
  "property_id",
  "unit_id",
  "source",
  "source_prospect_id",
  "status",
  "version",
  "created_at",
  "updated_at",
  "social_security_number_sealed",
]

/**
 * What the prospects context lets the console read of its prospects: a prospect's record with its fields (never
 * the sealed SSN), and the prospects a search names. The rows are this context's; readers take these types as
 * they are.
 */
/** A `like` pattern matching text that starts with `text`, with `%`, `_` and `\\` matched as themselves. */
const startsWith = (text: string) => `${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** Prospects whose first or last name starts with the words of `name` (`prospects_*_name_search`). */
const nameCondition = (sql: Sql, name: string) => {
  const [first, ...rest] = name.trim().split(/\s+/)
  if (first === undefined || first === "") return undefined
  return rest.length === 0
    ? sql`(lower(p.first_name) like ${startsWith(first)} or lower(p.last_name) like ${startsWith(first)})`
    : sql`(lower(p.first_name) like ${startsWith(first)} and lower(p.last_name) like ${startsWith(rest.join(" "))})`
}

export class ProspectReads extends Context.Service<ProspectReads>()(
  "partner-service/prospects/ProspectReads",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        prospect: (id: string) =>
          db
            .query(
              (sql) => sql<Array<ProspectRecordRow>>`
          select p.id::text, o.slug as owner_slug, o.name as owner_name, p.source, p.source_prospect_id,
            p.status, p.version, to_jsonb(p) - ${NOT_FIELDS}::text[] as fields, p.created_at, p.updated_at
          from prospects p join owners o on o.id = p.owner_id where p.id = ${id}::bigint`,
            )
            .pipe(Effect.map(([row]) => row)),
        /** Prospects by service id, partner's id or email (any of them given). */
        findProspects: (
          by: {
            readonly id?: string
            readonly sourceProspectId?: string
            readonly email?: string
            /**
             * The renter's name, or the start of it, ignoring case: one word matches the first or the last name,
             * more the first name (first word) and the last (the rest).
             */
            readonly name?: string
          },
          limit: number,
        ) =>
          db.query((sql) => {
            const conditions = [
              by.id === undefined ? undefined : sql`p.id = ${by.id}::bigint`,
              by.sourceProspectId === undefined
                ? undefined
                : sql`p.source_prospect_id = ${by.sourceProspectId}`,
              by.email === undefined ? undefined : sql`lower(p.email) = lower(${by.email})`,
              by.name === undefined ? undefined : nameCondition(sql, by.name),
            ].filter((condition) => condition !== undefined)
            if (conditions.length === 0) return Promise.resolve([] as Array<FoundRow>)
            const where = conditions.reduce((all, condition) => sql`${all} or ${condition}`)
            return sql<Array<FoundRow>>`
        select 'tpp_' || p.id as id,
          concat_ws(' ', 'tpp_' || p.id, nullif(concat_ws(' ', p.first_name, p.last_name), '')) as label,
          concat_ws(' · ', o.slug, p.source || '/' || p.source_prospect_id, p.email, p.status) as detail
        from prospects p join owners o on o.id = p.owner_id
        where ${where} order by p.id desc limit ${limit}`
          }),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(ProspectReads, ProspectReads.make)
}

import { Context, Effect, Layer } from "effect"
import { Db, type Sql } from "../platform/Db.ts"
import type { EnrollmentFlow, Source } from "./Domain.ts"

interface SourceRow {
  readonly code: string
  readonly flow: EnrollmentFlow
  readonly optional_ingest_fields: boolean
  readonly redirect_domains: Array<string>
  readonly clients: Array<string>
}

const toSource = (row: SourceRow): Source => ({
  code: row.code,
  flow: row.flow,
  optionalIngestFields: row.optional_ingest_fields,
  redirectDomains: row.redirect_domains,
  clients: row.clients,
})

/** Ordered by byte value (`collate "C"`), so the order does not depend on the database's locale. */
const selectSources = (sql: Sql, where: ReturnType<Sql>) => sql<Array<SourceRow>>`
  select s.code, s.flow, s.optional_ingest_fields, s.redirect_domains,
         coalesce(array_agg(sc.client_id order by sc.client_id collate "C") filter (where sc.client_id is not null), '{}')
           as clients
  from sources s
  left join source_clients sc on sc.source_code = s.code
  ${where}
  group by s.code
  order by s.code collate "C"`

export class SourcesRepo extends Context.Service<SourcesRepo>()("partner-service/prospects/SourcesRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db

    return {
      find: (code: string) =>
        db
          .query((sql) => selectSources(sql, sql`where s.code = ${code}`))
          .pipe(Effect.map((rows) => (rows[0] ? toSource(rows[0]) : undefined))),
      list: db.query((sql) => selectSources(sql, sql``)).pipe(Effect.map((rows) => rows.map(toSource))),
      /** Of `ids`, those that name a client. */
      existingClients: (ids: ReadonlyArray<string>) =>
        db
          .query(
            (sql) => sql<Array<{ id: string }>>`
              select id from clients where id = any(${sql.array([...ids])}::text[])`,
          )
          .pipe(Effect.map((rows) => new Set(rows.map((r) => r.id)))),
      /**
       * Inserts the source or updates it; an undefined field keeps the stored value (its default on insert).
       * The row stays locked until the transaction ends, so concurrent updates of one code run one after the
       * other.
       */
      upsert: (source: {
        readonly code: string
        readonly flow: EnrollmentFlow
        readonly optionalIngestFields: boolean | undefined
        readonly redirectDomains: ReadonlyArray<string> | undefined
      }) =>
        db.query((sql) => {
          const domains = source.redirectDomains === undefined ? null : sql.array([...source.redirectDomains])
          return sql`
            insert into sources as s (code, flow, optional_ingest_fields, redirect_domains)
            values (${source.code}, ${source.flow}, ${source.optionalIngestFields ?? false},
                    coalesce(${domains}::text[], '{}'))
            on conflict (code) do update set
              flow = excluded.flow,
              optional_ingest_fields = coalesce(${source.optionalIngestFields ?? null}::boolean,
                                                s.optional_ingest_fields),
              redirect_domains = coalesce(${domains}::text[], s.redirect_domains),
              updated_at = now()`
        }),
      /** Makes `clientIds` exactly the clients of the source. */
      replaceClients: (code: string, clientIds: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          yield* db.query(
            (sql) => sql`
              delete from source_clients
              where source_code = ${code} and client_id <> all(${sql.array([...clientIds])}::text[])`,
          )
          if (clientIds.length === 0) return
          yield* db.query(
            (sql) => sql`
              insert into source_clients ${sql(clientIds.map((clientId) => ({ source_code: code, client_id: clientId })))}
              on conflict do nothing`,
          )
        }),
      mayUse: (code: string, clientId: string) =>
        db
          .query(
            (sql) => sql<Array<{ listed: boolean }>>`
              select exists (
                select 1 from source_clients where source_code = ${code} and client_id = ${clientId}
              ) as listed`,
          )
          .pipe(Effect.map(([row]) => row?.listed === true)),
    }
  }),
}) {
  static readonly layer = Layer.effect(SourcesRepo, SourcesRepo.make)
}

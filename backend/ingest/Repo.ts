import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { OWNER_COLUMNS, type OwnerRow } from "../roster/Repo.ts"
import type { IngestOutcome, SourceMapping } from "./Domain.ts"

const OWNER_SELECT = OWNER_COLUMNS.map((column) => `o.${column}`).join(", ")

export interface IngestLogEntry {
  readonly event_id: string
  readonly received_at: string
  readonly source: string
  readonly event_type: string
  readonly source_prospect_id: string | null
  readonly occurred_at: string | null
  readonly outcome: IngestOutcome
  readonly reason: string | null
  readonly prospect_id: string | null
  readonly stream_seq: number
}

export interface IngestLogFilter {
  readonly source?: string | undefined
  readonly sourceProspectId?: string | undefined
  readonly outcome?: IngestOutcome | undefined
  readonly limit: number
}

export class IngestRepo extends Context.Service<IngestRepo>()("partner-service/ingest/IngestRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      mappings: (source: string) =>
        db
          .query(
            (sql) => sql<Array<{ event_type: string; fields: Record<string, string> }>>`
              select event_type, fields from source_event_mappings where source_code = ${source}
              order by event_type collate "C"`,
          )
          .pipe(
            Effect.map((rows): SourceMapping =>
              Object.fromEntries(rows.map((r) => [r.event_type, r.fields])),
            ),
          ),
      /** The source's mappings become exactly `mapping` (event types it omits are removed). */
      replaceMappings: (source: string, mapping: SourceMapping) =>
        db.transaction(
          Effect.all([
            db.query((sql) => sql`delete from source_event_mappings where source_code = ${source}`),
            db.query(
              (sql) => sql`
                insert into source_event_mappings (source_code, event_type, fields)
                select ${source}, m.key, m.value
                from jsonb_each(${sql.json(mapping as never)}::jsonb) m`,
            ),
          ]),
        ),
      /** Which of these event ids were already applied (or found stale) to their prospect. */
      appliedAmong: (eventIds: ReadonlyArray<string>) =>
        eventIds.length === 0
          ? Effect.succeed(new Set<string>())
          : db
              .query(
                (sql) => sql<Array<{ event_id: string }>>`
                  select distinct event_id from ingest_log
                  where event_id = any(${sql.array([...eventIds])}::text[]) and outcome in ('applied', 'stale')`,
              )
              .pipe(Effect.map((rows) => new Set(rows.map((r) => r.event_id)))),
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
      /** Log records, written in the order given. */
      recordAll: (entries: ReadonlyArray<IngestLogEntry>) =>
        entries.length === 0
          ? Effect.void
          : db.query(
              (sql) => sql`
                insert into ingest_log ${sql(
                  entries as never,
                  "event_id",
                  "received_at",
                  "source",
                  "event_type",
                  "source_prospect_id",
                  "occurred_at",
                  "outcome",
                  "reason",
                  "prospect_id",
                  "stream_seq",
                )}`,
            ),
      log: (filter: IngestLogFilter) =>
        db
          .query(
            (sql) => sql<
              Array<
                Omit<IngestLogEntry, "prospect_id"> & {
                  readonly id: string
                  readonly prospect_id: string | null
                }
              >
            >`
            select id, event_id, to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as received_at,
                   source, event_type, source_prospect_id,
                   to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as occurred_at,
                   outcome, reason, prospect_id, stream_seq
            from ingest_log
            where true
              ${filter.source === undefined ? sql`` : sql`and source = ${filter.source}`}
              ${filter.sourceProspectId === undefined ? sql`` : sql`and source_prospect_id = ${filter.sourceProspectId}`}
              ${filter.outcome === undefined ? sql`` : sql`and outcome = ${filter.outcome}`}
            order by id desc
            limit ${filter.limit}`,
          )
          .pipe(
            Effect.map((rows) =>
              rows.map((row) => ({
                ...row,
                id: Number(row.id),
                prospect_id: row.prospect_id === null ? null : Number(row.prospect_id),
                stream_seq: Number(row.stream_seq),
              })),
            ),
          ),
      prune: (retentionDays: number) =>
        db.query(
          (sql) =>
            sql`delete from ingest_log where created_at < now() - make_interval(days => ${retentionDays})`,
        ),
    }
  }),
}) {
  static readonly layer = Layer.effect(IngestRepo, IngestRepo.make)
}

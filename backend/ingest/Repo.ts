import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { IngestOutcome, SourceMapping } from "./Domain.ts"

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
  /** The API client that sent it. */
  readonly client_id: string | null
  /** What the source's mapping read from the payload, by field name, when a mapping was found. */
  readonly fields: Readonly<Record<string, unknown>> | null
}

const LOG_COLUMNS = [
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
  "client_id",
  "fields",
] as const satisfies ReadonlyArray<keyof IngestLogEntry>
const LOG_COLUMN_LIST = LOG_COLUMNS.join(", ")

/** An entry's logged columns, nothing else. */
const logRecord = (entry: IngestLogEntry) => {
  const record: Record<string, unknown> = {}
  for (const column of LOG_COLUMNS) record[column] = entry[column]
  return record
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
      /** Log records, written in the order given. */
      recordAll: (entries: ReadonlyArray<IngestLogEntry>) =>
        entries.length === 0
          ? Effect.void
          : db.query(
              // One JSON parameter whatever the number of entries: one prepared statement at every batch size.
              (sql) => sql`
                insert into ingest_log (${sql.unsafe(LOG_COLUMN_LIST)})
                select ${sql.unsafe(LOG_COLUMN_LIST)}
                from jsonb_populate_recordset(null::ingest_log, ${sql.json(entries.map(logRecord) as never)})
                  with ordinality as r
                order by ordinality`,
            ),
      log: (filter: IngestLogFilter) =>
        db
          .query(
            (sql) => sql<
              Array<
                Omit<IngestLogEntry, "prospect_id" | "client_id" | "fields"> & {
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

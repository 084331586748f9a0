import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { IngestOutcome } from "./Outcomes.ts"

/** A filter of the ingest log, already checked; every key optional, all of them must hold. */
export interface IngestLogFilter {
  readonly source?: string | undefined
  readonly outcome?: IngestOutcome | undefined
  /** The partner's prospect id. */
  readonly sourceProspectId?: string | undefined
  /** The service's prospect id (`tpp_<n>`): the events applied to it, and every other event of its key. */
  readonly prospectId?: string | undefined
  /** Received at or after (inclusive). */
  readonly since?: Date | undefined
  /** Received before (exclusive). */
  readonly until?: Date | undefined
  /** Strictly older rows than this id. */
  readonly before?: string | undefined
  readonly limit: number
}

export interface IngestLogRow {
  readonly id: string
  readonly event_id: string
  readonly outcome: IngestOutcome
  readonly reason: string | null
  readonly source: string
  readonly client_id: string | null
  readonly event_type: string
  readonly received_at: Date
  readonly occurred_at: Date | null
  readonly source_prospect_id: string | null
  readonly prospect_id: string | null
  readonly fields: Record<string, unknown> | null
  readonly stream_seq: string
}

/**
 * The console's reads of `ingest_log` (the ingest actor writes it, migrations 0006, 0014 and 0069), newest first
 * by id. A prospect's rows are found by its key (source and the partner's id), so its ignored and failed events
 * show beside those applied to it.
 */
export class IngestLogReads extends Context.Service<IngestLogReads>()(
  "partner-service/ingest/IngestLogReads",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        page: (filter: IngestLogFilter) =>
          db.query((sql) => {
            const conditions = [
              filter.source === undefined ? undefined : sql`l.source = ${filter.source}`,
              filter.outcome === undefined ? undefined : sql`l.outcome = ${filter.outcome}`,
              filter.sourceProspectId === undefined
                ? undefined
                : sql`l.source_prospect_id = ${filter.sourceProspectId}`,
              filter.prospectId === undefined
                ? undefined
                : sql`(l.source, l.source_prospect_id) in (
                  select p.source, p.source_prospect_id from prospects p where p.id = ${filter.prospectId}::bigint)`,
              filter.since === undefined ? undefined : sql`l.received_at >= ${filter.since}`,
              filter.until === undefined ? undefined : sql`l.received_at < ${filter.until}`,
              filter.before === undefined ? undefined : sql`l.id < ${filter.before}::bigint`,
            ].filter((condition) => condition !== undefined)
            const where = conditions.reduce(
              (all, condition, i) => (i === 0 ? sql`where ${condition}` : sql`${all} and ${condition}`),
              sql``,
            )
            return sql<Array<IngestLogRow>>`
            select l.id::text as id, l.event_id, l.outcome, l.reason, l.source, l.client_id, l.event_type,
                   l.received_at, l.occurred_at, l.source_prospect_id, l.prospect_id::text as prospect_id,
                   l.fields, l.stream_seq::text as stream_seq
            from ingest_log l ${where}
            order by l.id desc limit ${filter.limit}`
          }),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(IngestLogReads, IngestLogReads.make)
}

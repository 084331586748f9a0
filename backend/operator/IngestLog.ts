import { Context, Effect, Layer } from "effect"
import type { IngestLogEntry } from "./IngestApi.ts"
import { type IngestLogFilter, IngestLogReads, type IngestLogRow } from "../ingest/IngestLogReads.ts"

const entryView = (row: IngestLogRow): IngestLogEntry => ({
  id: Number(row.id),
  event_id: row.event_id,
  outcome: row.outcome,
  reason: row.reason,
  source: row.source,
  client_id: row.client_id,
  event_type: row.event_type,
  received_at: row.received_at.toISOString(),
  occurred_at: row.occurred_at?.toISOString() ?? null,
  source_prospect_id: row.source_prospect_id,
  prospect_id: row.prospect_id === null ? null : `tpp_${row.prospect_id}`,
  fields: row.fields,
  stream_seq: Number(row.stream_seq),
})

/** The console's ingest log: what became of every inbound event, newest first, a page at a time. */
export class IngestLog extends Context.Service<IngestLog>()("partner-service/operator/IngestLog", {
  make: Effect.gen(function* () {
    const repo = yield* IngestLogReads
    const page = Effect.fn("IngestLog.page")(function* (filter: IngestLogFilter) {
      const rows = yield* repo.page(filter)
      return {
        entries: rows.map(entryView),
        lastId: rows.length === filter.limit ? rows.at(-1)?.id : undefined,
      }
    })
    return { page }
  }),
}) {
  static readonly layer = Layer.effect(IngestLog, IngestLog.make).pipe(Layer.provide(IngestLogReads.layer))
}

import { Schema } from "effect"
import { IngestOutcomes } from "../ingest/Outcomes.ts"
import { Timestamp } from "./Api.ts"

/*
 * The console's ingest log (`GET /api/ingest`): every inbound event the ingest actor consumed and what became of
 * it. Schema-only, like `Api.ts`: the console decodes the answer with these.
 */

/** What became of an inbound event; `failed`: the ingest actor gave up on it (it is in the dead letters). */
export { IngestOutcomes }
export const IngestOutcome = Schema.Literals(IngestOutcomes)
export type IngestOutcome = typeof IngestOutcome.Type

export const IngestLogEntry = Schema.Struct({
  id: Schema.Number,
  /** The event's id, as the gateway answered it: a hash of source, event type and payload. */
  event_id: Schema.String,
  outcome: IngestOutcome,
  reason: Schema.NullOr(Schema.String),
  source: Schema.String,
  /** The API client that sent it; null for events logged before clients were kept. */
  client_id: Schema.NullOr(Schema.String),
  event_type: Schema.String,
  received_at: Timestamp,
  occurred_at: Schema.NullOr(Timestamp),
  /** The partner's prospect id, when the mapping found a usable one. */
  source_prospect_id: Schema.NullOr(Schema.String),
  /** The prospect it was applied to (`tpp_<n>`). */
  prospect_id: Schema.NullOr(Schema.String),
  /** What the source's mapping read from the payload, by field name; null when no mapping was found. */
  fields: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)),
  stream_seq: Schema.Number,
})
export type IngestLogEntry = typeof IngestLogEntry.Type

export const IngestLogPage = Schema.Struct({
  entries: Schema.Array(IngestLogEntry),
  next_cursor: Schema.NullOr(Schema.String),
})
export type IngestLogPage = typeof IngestLogPage.Type

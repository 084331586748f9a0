import { Schema } from "effect"
import { prospectFields } from "../prospects/Domain.ts"

/** Largest event body the ingestion gateway takes (well under NATS's 1 MiB message limit). */
export const MAX_EVENT_BYTES = 256 * 1024

/** An event type travels as a subject token: letters, digits and `_`, starting with a letter. */
const EVENT_TYPE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/

export const IngestEvent = Schema.Struct({
  source: Schema.String.annotate({
    description: "The partner's source code (the one of these credentials).",
  }),
  event_type: Schema.String.annotate({
    description: "The kind of event, for example `ProspectUpdate`: letters, digits and `_`.",
  }).check(
    Schema.isPattern(EVENT_TYPE, { message: "must be letters, digits and _, starting with a letter" }),
  ),
  payload: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: "The event in the partner's own field names; the source's mapping says where each field is.",
  }),
}).annotate({ identifier: "IngestEvent" })
export type IngestEvent = typeof IngestEvent.Type

export const IngestAccepted = Schema.Struct({
  status_code: Schema.Literal(202),
  event_id: Schema.String.annotate({
    description:
      "The event's id, a hash of source, event type and payload: the same event always has the same id.",
  }),
}).annotate({ identifier: "IngestAccepted" })

/** Fields a mapping must locate: they drive the upsert, the owner and the order of events. */
export const REQUIRED_MAPPED = ["source_prospect_id", "pms_property_id", "occurred_at"] as const

/**
 * Prospect fields a mapping may locate, plus `occurred_at` (the event time) and `earliest_move_in_date` (the
 * lease start, as inbound events name it). `source` comes from the event itself.
 */
export const MAPPABLE_FIELDS: ReadonlyArray<string> = [
  ...Object.keys(prospectFields).filter((field) => field !== "source"),
  "occurred_at",
  "earliest_move_in_date",
]

/** Where each field of one event type lives: field name -> JSON Pointer (RFC 6901) into the payload. */
export type EventMapping = Readonly<Record<string, string>>

/** A source's mappings by event type. */
export type SourceMapping = Readonly<Record<string, EventMapping>>

export type { IngestOutcome } from "./Outcomes.ts"

/** An operator's mapping file that cannot be used; nothing was changed. */
export class MappingRejected extends Schema.TaggedError<MappingRejected>()("MappingRejected", {
  message: Schema.String,
}) {}

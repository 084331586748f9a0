const MIB = 1024 * 1024
const GIB = 1024 * MIB

/**
 * The deployment's JetStream streams by base name (the deployment prefix goes in front of it): the first token of
 * every subject each holds, and what it does at its byte limit. Operators tail these names;
 * `docs/architecture.md` lists who writes and who reads each one.
 *
 * `new` refuses a message for streams whose unread messages exist nowhere else: the ingestion gateway then answers
 * 503 with Retry-After, and the outbox keeps its rows and publishes them again. `old` drops the oldest messages,
 * for streams Postgres can fill again (attempt messages: the deliveries are rows, and a lost attempt message is
 * published again) or that only people read (the roster's and the webhooks' status messages).
 *
 * `maxBytes` is each one's byte limit unless `NATS_MAX_BYTES_<STREAM>` sets another. JetStream reserves a
 * stream's byte limit out of the server's storage when the stream is created (a server refuses streams whose
 * limits add up to more than it may store), so the defaults stay within a small disk.
 */
export const Streams = {
  INGEST: { subjects: "ingest", discard: "new", maxBytes: 1 * GIB },
  ROSTER: { subjects: "roster", discard: "old", maxBytes: 256 * MIB },
  ELIGIBILITY: { subjects: "eligibility", discard: "new", maxBytes: 512 * MIB },
  EVENTS: { subjects: "events", discard: "new", maxBytes: 1 * GIB },
  WEBHOOKS: { subjects: "webhooks", discard: "old", maxBytes: 1 * GIB },
  DOCUMENTS: { subjects: "documents", discard: "new", maxBytes: 128 * MIB },
} as const
export type StreamBase = keyof typeof Streams

/**
 * The deployment's JetStream streams by base name (the deployment prefix goes in front of it): the first token of
 * every subject each holds, and what it does at its byte limit. Operators tail these names;
 * `docs/architecture.md` lists who writes and who reads each one.
 *
 * `new` refuses a message for streams whose unread messages exist nowhere else: the ingestion gateway then answers
 * 503 with Retry-After, and the outbox keeps its rows and publishes them again. `old` drops the oldest messages,
 * for streams Postgres can fill again (attempt messages: the deliveries are rows, and a lost attempt message is
 * published again) or that only people read (the roster's and the webhooks' status messages).
 */
export const Streams = {
  INGEST: { subjects: "ingest", discard: "new" },
  ROSTER: { subjects: "roster", discard: "old" },
  ELIGIBILITY: { subjects: "eligibility", discard: "new" },
  EVENTS: { subjects: "events", discard: "new" },
  WEBHOOKS: { subjects: "webhooks", discard: "old" },
  DOCUMENTS: { subjects: "documents", discard: "new" },
} as const
export type StreamBase = keyof typeof Streams

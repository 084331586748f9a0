/**
 * The deployment's JetStream streams: each base name (the deployment prefix goes in front of it) with the first
 * token of every subject it holds. Operators tail these names; `docs/architecture.md` lists who writes and who
 * reads each one.
 */
export const Streams = {
  INGEST: "ingest",
  ROSTER: "roster",
  ELIGIBILITY: "eligibility",
  EVENTS: "events",
  WEBHOOKS: "webhooks",
  DOCUMENTS: "documents",
} as const
export type StreamBase = keyof typeof Streams

/**
 * What became of an inbound event, in a file that imports nothing so the console's schemas can take it as it is;
 * `failed`: the ingest actor gave up on it (it is in the dead letters).
 */
export const IngestOutcomes = ["applied", "stale", "duplicate", "ignored", "failed"] as const
export type IngestOutcome = (typeof IngestOutcomes)[number]

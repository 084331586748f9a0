import { Context, Effect, Layer } from "effect"
import { integer, setting } from "../platform/Settings.ts"

/** The ingestion side's settings (README: `INGEST_LOG_RETENTION_DAYS`). */
export interface IngestConfigShape {
  /** Days the ingest log keeps a consumed event's record. */
  readonly logRetentionDays: number
}

export const loadIngestConfig = Effect.gen(function* () {
  return {
    logRetentionDays: yield* setting(
      "INGEST_LOG_RETENTION_DAYS",
      "a whole number of days from 1 to 3650",
      integer(1, 3650),
      () => 30,
    ),
  } satisfies IngestConfigShape
})

export class IngestConfig extends Context.Service<IngestConfig, IngestConfigShape>()(
  "partner-service/ingest/IngestConfig",
) {
  /** Read from the settings `AppConfig` was read from, when it is built. */
  static readonly layer = Layer.effect(IngestConfig, loadIngestConfig)
}

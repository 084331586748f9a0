import { Effect, Layer, Schedule } from "effect"
import { ack, type ActorDefinition, actorLayer } from "../platform/Actor.ts"
import { IngestEvent } from "./Domain.ts"
import { HEADER_CLIENT, HEADER_RECEIVED_AT, Ingest, INGEST_PARTITIONS } from "./Ingest.ts"

/**
 * The ingest actor: one durable consumer per partition of `ingest.<source>.<event_type>`, so one prospect's
 * events are applied one at a time and in the order the gateway stored them, across every process.
 */
export const ingestActor: ActorDefinition<IngestEvent, Ingest> = {
  name: "ingest",
  stream: "INGEST",
  subject: "ingest.*.*",
  partitions: INGEST_PARTITIONS,
  schema: IngestEvent,
  handle: (event, delivery) =>
    Ingest.use((ingest) =>
      ingest.consume({
        event,
        eventId: delivery.headers["Nats-Msg-Id"] ?? "",
        receivedAt: delivery.headers[HEADER_RECEIVED_AT] ?? new Date(0).toISOString(),
        clientId: delivery.headers[HEADER_CLIENT] ?? "",
        streamSequence: delivery.streamSequence,
      }),
    ).pipe(Effect.as(ack)),
}

/** The ingest actor, and the hourly prune of ingest log records past their retention. */
export const ingestWorkersLayer = Layer.mergeAll(
  actorLayer(ingestActor),
  Layer.effectDiscard(
    Effect.forkScoped(
      Ingest.use((ingest) => ingest.prune).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("ingest log prune failed").pipe(Effect.annotateLogs({ cause: String(cause) })),
        ),
        Effect.repeat(Schedule.spaced("1 hour")),
      ),
    ),
  ),
)

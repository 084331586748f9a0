import { availableParallelism } from "node:os"
import { Effect, Layer, Schedule } from "effect"
import { actorLayer } from "../platform/Actor.ts"
import { parseExactJson } from "../platform/Http.ts"
import { ack, type ActorDefinition, type Delivery } from "../platform/ActorDefinition.ts"
import { IngestEvent } from "./Domain.ts"
import { type ConsumedEvent, HEADER_CLIENT, HEADER_RECEIVED_AT, Ingest, INGEST_PARTITIONS } from "./Ingest.ts"

/** Events of one partition applied in one transaction, at most. */
export const INGEST_BATCH = 100

const consumedOf = (event: IngestEvent, delivery: Delivery): ConsumedEvent => ({
  event,
  eventId: delivery.headers["Nats-Msg-Id"] ?? "",
  receivedAt: delivery.headers[HEADER_RECEIVED_AT] ?? new Date(0).toISOString(),
  clientId: delivery.headers[HEADER_CLIENT] ?? "",
  streamSequence: delivery.streamSequence,
})

/**
 * The ingest actor: one durable consumer per partition of `ingest.<source>.<event_type>`, led by one process at a
 * time, which applies up to `INGEST_BATCH` of its events in stream order in one transaction, so one prospect's
 * events are applied in the order the gateway stored them, across every process.
 */
export const ingestActor: ActorDefinition<IngestEvent, Ingest> = {
  name: "ingest",
  stream: "INGEST",
  subject: "ingest.*.*",
  partitions: INGEST_PARTITIONS,
  schema: IngestEvent,
  // The gateway hashed and keyed the event so: a large numeric id must read as the same digits here.
  parse: parseExactJson,
  handle: (event, delivery) =>
    Ingest.use((ingest) => ingest.consume(consumedOf(event, delivery))).pipe(Effect.as(ack)),
  onTerminated: (terminated) => Ingest.use((ingest) => ingest.recordTerminated(terminated)),
  batch: {
    size: INGEST_BATCH,
    // Two transactions a core: under a steady flow the other partitions' batches grow while they wait.
    handling: Math.max(2, availableParallelism() * 2),
    handle: (messages) =>
      Ingest.use((ingest) =>
        ingest.consumeBatch(messages.map(({ message, delivery }) => consumedOf(message, delivery))),
      ).pipe(Effect.map((outcomes) => outcomes.map(() => ack))),
  },
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

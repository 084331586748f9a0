import { Effect } from "effect"
import { ack, type ActorDefinition } from "../platform/ActorDefinition.ts"
import { DOCUMENT_PARTITIONS, DocumentsRequested } from "./Events.ts"
import { Policies } from "./Policies.ts"

/**
 * The document actor: makes each requested generation of a policy's archive, one policy at a time (requests are
 * partitioned by policy), away from the renter's request, so a slow generation never holds up their answer. A
 * generation that fails is retried with the runtime's backoff and kept in dead letters after ten tries.
 */
export const documentActor: ActorDefinition<DocumentsRequested, Policies> = {
  name: "documents",
  stream: "DOCUMENTS",
  subject: "documents.generate.*",
  partitions: DOCUMENT_PARTITIONS,
  schema: DocumentsRequested,
  maxDefects: 10,
  handle: (request) =>
    Policies.use((policies) => policies.generateDocuments(request)).pipe(
      Effect.tap((outcome) =>
        outcome === "unknown"
          ? Effect.logWarning("documents requested for an unknown policy generation").pipe(
              Effect.annotateLogs({ policy_id: request.policy_id, generation: request.generation }),
            )
          : Effect.void,
      ),
      Effect.as(ack),
    ),
}

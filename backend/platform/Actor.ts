import { Cause, Effect, Fiber, Layer, type Scope, Semaphore } from "effect"
import type { ActorDefinition } from "./ActorDefinition.ts"
import { batchHandling, singleHandling } from "./actor/Handling.ts"
import { actorPulls, consumeBatches, consumePartition, type PullingContext } from "./actor/Pulling.ts"
import { actorReports } from "./actor/Reports.ts"
import { actorSettling } from "./actor/Settling.ts"
import type { Db } from "./Db.ts"
import { dependencyPause } from "./DependencyPause.ts"
import { Nats } from "./Nats.ts"
import { type Leases, partitionLeases } from "./PartitionLeases.ts"

const DRAIN_TIMEOUT = "8 seconds"

/**
 * Runs an actor over one durable pull consumer per partition, each with `max_ack_pending` 1 unless the actor
 * asks for more concurrency: JetStream hands out one message of a partition at a time, whichever process pulls
 * it, so the messages of one key are handled one at a time and in stream order across every process, while
 * partitions run concurrently. In batch mode only the process leading a partition pulls from it, up to the batch
 * size at once, and hands each batch to the handler in stream order.
 * On scope close it stops pulling, lets in-flight handlers finish (naking what it cannot finish in time),
 * then returns. Its parts, in `actor/`: what it reports (`Reports`), how it settles (`Settling`), how it handles a
 * message or a batch (`Handling`), and how it pulls (`Pulling`); the outage pause is `DependencyPause`.
 */
export const runActor = <A, R>(
  actor: ActorDefinition<A, R>,
): Effect.Effect<void, never, Nats | Db | Scope.Scope | R> =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const stream = nats.streamName(actor.stream)
    let stopped = false
    const isStopped = () => stopped
    const reports = yield* actorReports(actor.name, actor.partitions)
    const settling = yield* actorSettling(actor, stream, reports)
    // A message whose handler found a dependency unavailable is nak'd back shortly, never terminated.
    const { pause, available } = yield* dependencyPause(actor.name, isStopped)
    const single = yield* singleHandling(actor, reports, settling, pause)
    const context: PullingContext = {
      stream,
      reports,
      stopped: isStopped,
      available,
      handBack: settling.handBack,
    }
    const pulls = yield* actorPulls(actor, context)

    const partitions = Math.max(actor.partitions, 1)
    let loop: (partition: number) => Effect.Effect<void, unknown, R>
    if (actor.batch === undefined) {
      loop = consumePartition(pulls, context, actor.concurrency ?? 1, single.process)
    } else {
      // Per stream as well: deployments sharing a database under different subject prefixes lead apart.
      const leases: Leases = yield* partitionLeases(`${stream}/${actor.name}`, partitions)
      const handling =
        actor.batch.handling === undefined ? undefined : yield* Semaphore.make(actor.batch.handling)
      const processBatch = batchHandling(actor, actor.batch, single, reports, settling, pause)
      loop = consumeBatches(pulls, context, actor.batch.size, handling, leases, processBatch)
    }
    const pullLoop = (partition: number) =>
      loop(partition).pipe(
        Effect.catchCause((cause) =>
          pulls
            .pullFailed(partition, String(Cause.squash(cause)))
            .pipe(Effect.andThen(Effect.sleep("1 second"))),
        ),
        Effect.repeat({ while: () => !stopped }),
      )
    const fibers = yield* Effect.forEach(
      Array.from({ length: partitions }, (_, i) => i),
      (partition) => Effect.forkDetach(pullLoop(partition)),
    )
    // Runs before the leases are released (finalizers run last-added first): partitions are let go only once the
    // work in hand was settled.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => void (stopped = true)).pipe(
        Effect.andThen(Fiber.joinAll(fibers)),
        Effect.timeout(DRAIN_TIMEOUT),
        Effect.catchCause(() => Fiber.interruptAll(fibers)),
        Effect.andThen(Effect.sync(settling.flush)),
        Effect.andThen(Effect.logInfo("actor drained").pipe(Effect.annotateLogs({ actor: actor.name }))),
      ),
    )
  })

export const actorLayer = <A, R>(actor: ActorDefinition<A, R>) => Layer.effectDiscard(runActor(actor))

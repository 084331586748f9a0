import { Effect, FiberSet, Semaphore } from "effect"
import type { ActorDefinition } from "../ActorDefinition.ts"
import { type DurableConsumer, Nats, type PulledMessage } from "../Nats.ts"
import type { Leases } from "../PartitionLeases.ts"
import type { ActorReports } from "./Reports.ts"

/** How long one pull waits for a message; also how long stopping may wait for an idle partition. */
const PULL_EXPIRES = 1000
/** How long a partition loop waits before looking again whether its process leads the partition. */
const LEASE_WAIT = "200 millis"
/**
 * How long a message may go unsettled and unmarked before JetStream hands it to another process. Messages in hand
 * are marked in progress every second however long their handler works (`Puller`), so this is how soon the
 * messages of a process that died are taken over.
 */
const ACK_WAIT = "4 seconds"

/** What the pull loops of one actor share. */
export interface PullingContext {
  readonly stream: string
  readonly reports: ActorReports
  readonly stopped: () => boolean
  /** Returns at once unless the actor is paused for a dependency; then once it answers. */
  readonly available: Effect.Effect<void>
  readonly handBack: (msg: PulledMessage) => void
}

/**
 * The pulls of one partition's durable consumer. A failing pull (NATS away, a stream electing its leader) is
 * warned of once when it starts failing and once when it pulls again, not on every retry.
 */
export const actorPulls = <A, R>(actor: ActorDefinition<A, R>, context: PullingContext) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const pullsFailing = new Set<number>()
    const pullFailed = (partition: number, cause: string) =>
      pullsFailing.has(partition)
        ? Effect.void
        : Effect.logWarning("actor pull failed; retrying every second").pipe(
            Effect.annotateLogs({ actor: actor.name, partition, cause }),
            Effect.andThen(Effect.sync(() => pullsFailing.add(partition))),
          )
    const pullSucceeded = (partition: number) =>
      pullsFailing.delete(partition)
        ? Effect.logInfo("actor pulls again").pipe(Effect.annotateLogs({ actor: actor.name, partition }))
        : Effect.void

    /**
     * The partition's consumer, made if missing, and its pull: up to `count` messages, each handed to `onMessage`
     * as it arrives; the number that came. The pull ends when they have all come or after `PULL_EXPIRES`, when
     * JetStream says it expired: either way no pull of ours is left waiting on the server once this returns, so
     * none can hand a message to a process that is gone. A pull JetStream ended otherwise (its consumer deleted)
     * is logged, and the consumer made again, a second later.
     */
    const consumerFor = (partition: number, maxAckPending: number) =>
      Effect.gen(function* () {
        const filter = actor.partitions === 0 ? actor.subject : `${actor.subject}.${partition}`
        const consumer: DurableConsumer = {
          stream: context.stream,
          name: `${actor.name}_p${partition}`,
          // A filter that is the whole stream is left out: nats-server before 2.9.15 can miscount a filtered
          // consumer's pending messages and then recount them on every delivery (see `recountsPendingPerDelivery`);
          // an unfiltered one is counted by arithmetic.
          filterSubject: filter === nats.streamSubjects(actor.stream) ? "" : nats.subject(filter),
          ackWait: actor.ackWait ?? ACK_WAIT,
          maxAckPending,
        }
        yield* nats.ensureConsumer(consumer)
        const puller = yield* nats.puller(context.stream, consumer.name)
        return (count: number, onMessage: (msg: PulledMessage) => void, expiresMs = PULL_EXPIRES) =>
          puller.pull(count, expiresMs, onMessage).pipe(
            Effect.tap(() => Effect.andThen(pullSucceeded(partition), context.reports.passed(partition))),
            Effect.catchTag("PullFailed", (failed) =>
              pullFailed(partition, failed.message).pipe(
                Effect.andThen(Effect.sleep("1 second")),
                Effect.andThen(nats.ensureConsumer(consumer)),
                Effect.as(failed.received),
              ),
            ),
          )
      })

    return { consumerFor, pullFailed }
  })

export type ActorPulls = Effect.Success<ReturnType<typeof actorPulls>>

/**
 * Per partition: one pull at a time, for as many messages as there are free slots (`concurrency`), once at
 * least a quarter of them is free; each message is handled as it arrives, while the pull waits for the rest.
 * The pull thus stays open on the server for up to `PULL_EXPIRES`, and a message published meanwhile reaches its
 * handler at once, with no request of its own; a busy partition makes one pull per many messages. With
 * `concurrency` 1 it is one message per pull, in stream order. A message that arrives while stopping is handed
 * back at once; stopping waits for the pull to end and for the messages in hand.
 */
export const consumePartition =
  <R>(
    pulls: ActorPulls,
    context: PullingContext,
    concurrency: number,
    process: (msg: PulledMessage, partition: number) => Effect.Effect<void, never, R>,
  ) =>
  (partition: number) =>
    Effect.gen(function* () {
      const pull = yield* pulls.consumerFor(partition, concurrency)
      // A slot per message in hand: a pull asks for as many messages as there are free slots.
      const slots = yield* Semaphore.make(concurrency)
      /** Waits until at least `need` slots are free (only handlers free them), then takes every free one. */
      const takeFree = (need: number) =>
        Effect.gen(function* () {
          yield* slots.take(need)
          // Releasing none answers how many are free; only this loop takes slots, so they stay free.
          const more = yield* slots.release(0)
          if (more > 0) yield* slots.take(more)
          return need + more
        })
      const inHand = yield* FiberSet.make()
      const run = yield* FiberSet.runtime(inHand)<R>()
      const start = (msg: PulledMessage) =>
        context.stopped()
          ? Effect.sync(() => context.handBack(msg)).pipe(Effect.andThen(slots.release(1)))
          : Effect.ensuring(process(msg, partition), slots.release(1))
      const quarter = Math.max(1, Math.floor(concurrency / 4))
      while (!context.stopped()) {
        yield* context.available
        const count = yield* takeFree(quarter)
        if (context.stopped()) {
          yield* slots.release(count)
          break
        }
        const got = yield* pull(count, (msg) => void run(start(msg)))
        if (got < count) yield* slots.release(count - got)
      }
      yield* FiberSet.awaitEmpty(inHand)
    }).pipe(Effect.scoped)

/**
 * Batch mode, while this process leads the partition: one message (a pull expiring after `PULL_EXPIRES`), then as
 * many of those JetStream said were waiting behind it as the batch holds, in one more pull. Only the leader pulls,
 * so those are there and the pull ends at once. A full batch is handled at once; one with room waits its turn
 * among the `handling` batches with room this process handles at a time, then takes what arrived meanwhile: under
 * a steady flow, batches grow and fewer transactions carry the same events.
 */
export const consumeBatches =
  <R>(
    pulls: ActorPulls,
    context: PullingContext,
    size: number,
    handling: Semaphore.Semaphore | undefined,
    leases: Leases,
    processBatch: (msgs: ReadonlyArray<PulledMessage>, partition: number) => Effect.Effect<void, never, R>,
  ) =>
  (partition: number) =>
    Effect.gen(function* () {
      const pull = yield* pulls.consumerFor(partition, size)
      while (!context.stopped()) {
        yield* context.available
        if (!leases.leads(partition)) {
          yield* context.reports.passed(partition)
          yield* leases.settle(partition)
          yield* Effect.sleep(LEASE_WAIT)
          continue
        }
        const msgs: Array<PulledMessage> = []
        const collect = (msg: PulledMessage) => void msgs.push(msg)
        if ((yield* pull(1, collect)) === 0) continue
        const more = Math.min(msgs[0]!.info.pending, size - 1)
        if (more > 0 && !context.stopped()) yield* pull(more, collect)
        const handle = Effect.suspend(() => {
          if (!context.stopped() && leases.leads(partition)) return processBatch(msgs, partition)
          for (const msg of msgs) context.handBack(msg)
          return Effect.void
        })
        // What arrived while the batch waited its turn: only those there now (a pull that does not wait).
        const gathered = Effect.suspend(() =>
          context.stopped() ? Effect.void : pull(size - msgs.length, collect, 0),
        )
        if (handling === undefined || msgs.length === size) yield* handle
        else yield* handling.withPermits(1)(Effect.andThen(gathered, handle))
      }
    }).pipe(Effect.scoped)

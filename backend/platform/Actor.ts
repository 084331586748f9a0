import { Cause, Clock, Duration, Effect, Fiber, FiberSet, Layer, Schema, type Scope, Semaphore } from "effect"
import {
  type ActorBatch,
  type ActorDefinition,
  type Delivered,
  type Delivery,
  nak,
  type Outcome,
  term,
} from "./ActorDefinition.ts"
import { Db } from "./Db.ts"
import { type DurableConsumer, Nats, type PulledMessage } from "./Nats.ts"
import { metrics } from "./Observability.ts"
import { ACCEPTED_AT_HEADER, AcceptedAt } from "./Outbox.ts"
import { dependencyPause } from "./DependencyPause.ts"
import { type Leases, partitionLeases } from "./PartitionLeases.ts"
import { makeSettlements } from "./Settlements.ts"
import { continueTrace, TRACEPARENT, Traced } from "./Tracing.ts"
import { unavailableIn } from "./Unavailable.ts"

/**
 * How long a message may go unsettled and unmarked before JetStream hands it to another process. Messages in hand
 * are marked in progress every second however long their handler works (`Puller`), so this is how soon the
 * messages of a process that died are taken over.
 */
const ACK_WAIT = "4 seconds"
/** How long one pull waits for a message; also how long stopping may wait for an idle partition. */
const PULL_EXPIRES = 1000
const DRAIN_TIMEOUT = "8 seconds"
/** How long a partition loop waits before looking again whether its process leads the partition. */
const LEASE_WAIT = "200 millis"
const decoder = new TextDecoder()

/** How soon a message whose handler found a dependency unavailable comes back. */
const UNAVAILABLE_DELAY = Duration.seconds(1)

/** Backoff for a handler that died: 1 s, 2 s, 4 s ... capped at one minute. */
const defectDelay = (deliveryCount: number) => Duration.seconds(Math.min(2 ** (deliveryCount - 1), 60))

const readHeaders = (msg: PulledMessage) => {
  const out: Record<string, string> = {}
  for (const key of msg.headers?.keys() ?? []) out[key] = msg.headers?.get(key) ?? ""
  return out
}

/**
 * Runs an actor over one durable pull consumer per partition, each with `max_ack_pending` 1 unless the actor
 * asks for more concurrency: JetStream hands out one message of a partition at a time, whichever process pulls
 * it, so the messages of one key are handled one at a time and in stream order across every process, while
 * partitions run concurrently. In batch mode only the process leading a partition pulls from it, up to the batch
 * size at once, and hands each batch to the handler in stream order.
 * On scope close it stops pulling, lets in-flight handlers finish (naking what it cannot finish in time),
 * then returns.
 */
export const runActor = <A, R>(
  actor: ActorDefinition<A, R>,
): Effect.Effect<void, never, Nats | Db | Scope.Scope | R> =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const db = yield* Db
    const stream = nats.streamName(actor.stream)
    // JSON.parse, then the schema: cheaper than `Schema.fromJsonString`, and it runs on every message.
    const decode = Schema.decodeUnknownResult(actor.schema)
    const parse = actor.parse ?? ((text: string) => JSON.parse(text) as unknown)
    const maxDefects = actor.maxDefects ?? 5
    const traced = yield* Traced
    let stopped = false
    const settlements = makeSettlements()
    // A message whose handler found a dependency unavailable is nak'd with `UNAVAILABLE_DELAY`, never terminated.
    const { pause, available } = yield* dependencyPause(actor.name, () => stopped)

    const handledCount = {
      Ack: metrics.actorHandled({ actor: actor.name, outcome: "ack" }),
      Nak: metrics.actorHandled({ actor: actor.name, outcome: "nak" }),
      Term: metrics.actorHandled({ actor: actor.name, outcome: "term" }),
    }
    const lag = Array.from({ length: Math.max(actor.partitions, 1) }, (_, partition) =>
      metrics.actorLag({ actor: actor.name, partition: String(partition) }),
    )
    const lastPass = metrics.loopLastPass({ loop: `actor:${actor.name}` })
    // A stopped actor has no last pass to report: left in place, it would read as a loop that stalled.
    yield* Effect.addFinalizer(() => Effect.sync(lastPass.release))
    /**
     * When each partition's loop last completed a pull cycle (epoch ms); the actor's pass, reported as
     * `loop_last_pass_timestamp_seconds{loop="actor:<name>"}`, is its slowest partition's, so one stuck partition
     * shows however busy the others are. Until its first cycle ends, a partition's last pass is the actor's start,
     * so one that never passes shows as stalled a minute after it.
     */
    const startedAt = yield* Clock.currentTimeMillis
    const lastPull = lag.map(() => startedAt)
    lastPass.set(startedAt / 1000)
    const passed = (partition: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          lastPull[partition] = now
          lastPass.set(Math.min(...lastPull) / 1000)
        }),
      )

    /** Whether this is the message's first record (a term that was lost and repeated is recorded once). */
    const recordDeadLetter = (msg: PulledMessage, reason: string) =>
      db
        .query(
          (sql) => sql`
          insert into dead_letters (actor, stream, stream_seq, subject, headers, payload, reason, delivery_count)
          values (${actor.name}, ${stream}, ${msg.seq}, ${nats.unprefixed(msg.subject)},
                  ${sql.json(readHeaders(msg))}, ${Buffer.from(msg.data)}, ${reason}, ${msg.info.deliveryCount})
          on conflict (actor, stream, stream_seq) do nothing
          returning stream_seq`,
        )
        .pipe(Effect.map((rows) => rows.length > 0))

    const terminated = (msg: PulledMessage, reason: string): Effect.Effect<void, never, R> =>
      actor.onTerminated === undefined
        ? Effect.void
        : Effect.suspend(() =>
            actor.onTerminated!({
              subject: nats.unprefixed(msg.subject),
              streamSequence: msg.seq,
              headers: readHeaders(msg),
              raw: msg.data,
              reason,
            }),
          ).pipe(
            Effect.catchCause((cause) =>
              Effect.logWarning("actor could not record a terminated message").pipe(
                Effect.annotateLogs({ actor: actor.name, seq: msg.seq, cause: Cause.pretty(cause) }),
              ),
            ),
          )

    const settle = (msg: PulledMessage, outcome: Outcome): Effect.Effect<void, never, R> => {
      switch (outcome._tag) {
        case "Ack":
          return Effect.sync(() => {
            handledCount.Ack.inc()
            settlements.ack(msg)
          })
        case "Nak":
          return Effect.sync(() => {
            handledCount.Nak.inc()
            settlements.nak(msg, Duration.toMillis(outcome.delay))
          })
        case "Term":
          return Effect.gen(function* () {
            handledCount.Term.inc()
            if (yield* recordDeadLetter(msg, outcome.reason)) yield* terminated(msg, outcome.reason)
            yield* Effect.logWarning("message terminated").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                subject: msg.subject,
                seq: msg.seq,
                reason: outcome.reason,
              }),
            )
            // No reason on the wire: nats-server 2.9 ignores `+TERM <reason>`; the reason is in dead_letters.
            msg.term()
          })
      }
    }

    const poison = (msg: PulledMessage, reason: string) => {
      metrics.actorFailed.inc({ actor: actor.name, reason: "undecodable" })
      return settle(msg, term(`undecodable: ${reason}`))
    }

    /** Counts the delivery and decodes it: the message with its delivery, or why it cannot be decoded. */
    const received = (
      msg: PulledMessage,
      partition: number,
    ): (Delivered<A> & { readonly msg: PulledMessage }) | { readonly undecodable: string } => {
      const deliveryCount = msg.info.deliveryCount
      if (deliveryCount > 1) metrics.actorRedelivered.inc({ actor: actor.name })
      lag[partition]!.set(msg.info.pending)
      let json: unknown
      try {
        json = parse(decoder.decode(msg.data))
      } catch (error) {
        return { undecodable: `not JSON: ${(error as Error).message}` }
      }
      const decoded = decode(json)
      if (decoded._tag === "Failure") return { undecodable: decoded.failure.message }
      let headers: Readonly<Record<string, string>> | undefined
      const delivery: Delivery = {
        subject: nats.unprefixed(msg.subject),
        streamSequence: msg.seq,
        deliveryCount,
        pending: msg.info.pending,
        // Read when asked for: many handlers never look at them.
        get publishedAt() {
          return new Date(msg.info.timestampNanos / 1e6)
        },
        get headers() {
          return (headers ??= readHeaders(msg))
        },
        raw: msg.data,
      }
      return { msg, message: decoded.success, delivery }
    }

    /**
     * The single handler's outcome; a handler that dies is retried with backoff, then terminated. What it writes to
     * the outbox dates from when the message's own work was accepted.
     */
    const handleOne = (item: Delivered<A> & { readonly msg: PulledMessage }) => {
      const accepted = item.msg.headers?.get(ACCEPTED_AT_HEADER)
      const handled = actor.handle(item.message, item.delivery)
      // Most messages (the webhook attempts) carry no acceptance time: they are handled as they are.
      return (accepted ? Effect.provideService(handled, AcceptedAt, accepted) : handled).pipe(
        Effect.catchCause((cause) =>
          Effect.gen(function* () {
            const unavailable = unavailableIn(cause)
            if (unavailable !== undefined) {
              yield* pause(unavailable)
              return nak(UNAVAILABLE_DELAY)
            }
            const deliveryCount = item.delivery.deliveryCount
            metrics.actorFailed.inc({ actor: actor.name, reason: "defect" })
            yield* Effect.logError("actor handler died").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                seq: item.msg.seq,
                deliveryCount,
                cause: Cause.pretty(cause),
              }),
            )
            return deliveryCount >= maxDefects
              ? term(`handler died ${deliveryCount} times: ${Cause.pretty(cause).split("\n")[0]}`)
              : nak(defectDelay(deliveryCount))
          }),
        ),
      )
    }

    /**
     * While traces are exported, a message is handled in a consumer span continuing the trace of its
     * `traceparent` header (the outbox's, the router's).
     */
    const handleTraced = (item: Delivered<A> & { readonly msg: PulledMessage }) =>
      traced
        ? handleOne(item).pipe(
            continueTrace(`Actor.${actor.name}`, item.msg.headers?.get(TRACEPARENT), {
              kind: "consumer",
              attributes: {
                "messaging.system": "nats",
                "messaging.destination.name": item.delivery.subject,
                "messaging.message.delivery_count": item.delivery.deliveryCount,
              },
            }),
          )
        : handleOne(item)

    const process = (msg: PulledMessage, partition: number) =>
      Effect.suspend(() => {
        const item = received(msg, partition)
        return "undecodable" in item
          ? poison(msg, item.undecodable)
          : Effect.flatMap(handleTraced(item), (outcome) => settle(msg, outcome))
      }).pipe(
        // No span per message unless traces are exported: it costs more than a small handler.
        // Only a drain timeout interrupts a handler: hand the message back at once rather than after ack_wait.
        Effect.onInterrupt(() => Effect.sync(() => settlements.nak(msg))),
      )

    /** The batch handler's outcomes, or undefined when it died or miscounted (logged and counted). */
    const handleWhole = (
      batch: ActorBatch<A, R>,
      items: ReadonlyArray<Delivered<A>>,
      partition: number,
    ): Effect.Effect<ReadonlyArray<Outcome> | undefined, never, R> =>
      batch.handle(items).pipe(
        Effect.flatMap((outcomes) =>
          outcomes.length === items.length
            ? Effect.succeed(outcomes)
            : Effect.die(new Error(`${outcomes.length} outcomes for ${items.length} messages`)),
        ),
        Effect.catchCause((cause) =>
          Effect.gen(function* () {
            const unavailable = unavailableIn(cause)
            if (unavailable !== undefined) {
              yield* pause(unavailable)
              return items.map(() => nak(UNAVAILABLE_DELAY))
            }
            metrics.actorFailed.inc({ actor: actor.name, reason: "batch" })
            yield* Effect.logWarning("actor batch failed; handling its messages one at a time").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                partition,
                messages: items.length,
                cause: Cause.pretty(cause).split("\n")[0],
              }),
            )
            return undefined
          }),
        ),
      )

    /**
     * One batch: decoded in order, handed whole to the batch handler, each message settled with its outcome after
     * the handler returned. A batch handler that dies hands the batch to the single handler, one message at a
     * time in stream order, so a poison message only retries (and is terminated) by itself.
     */
    const processBatch = (
      batch: ActorBatch<A, R>,
      msgs: ReadonlyArray<PulledMessage>,
      partition: number,
    ): Effect.Effect<void, never, R> => {
      const settled = new Set<PulledMessage>()
      const settleOnce = (msg: PulledMessage, outcome: Outcome) =>
        settle(msg, outcome).pipe(Effect.ensuring(Effect.sync(() => settled.add(msg))))
      return Effect.gen(function* () {
        const items: Array<Delivered<A> & { readonly msg: PulledMessage }> = []
        for (const msg of msgs) {
          const item = received(msg, partition)
          if ("undecodable" in item) {
            yield* poison(msg, item.undecodable)
            settled.add(msg)
          } else items.push(item)
        }
        const outcomes = items.length > 1 ? yield* handleWhole(batch, items, partition) : undefined
        for (const [i, item] of items.entries()) {
          let outcome = outcomes?.[i]
          if (outcome === undefined) outcome = yield* handleOne(item)
          yield* settleOnce(item.msg, outcome)
        }
      }).pipe(
        Effect.withSpan(`Actor.${actor.name}.batch`),
        // Only a drain timeout interrupts a batch: hand back at once what was not settled.
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            for (const msg of msgs) if (!settled.has(msg)) settlements.nak(msg)
          }),
        ),
      )
    }

    /**
     * Partitions whose pulls are failing (NATS away, a stream electing its leader): warned of once when they start
     * failing and once when they pull again, not on every retry.
     */
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

    const concurrency = actor.concurrency ?? 1
    const consumerFor = (partition: number, maxAckPending: number) =>
      Effect.gen(function* () {
        const filter = actor.partitions === 0 ? actor.subject : `${actor.subject}.${partition}`
        const consumer: DurableConsumer = {
          stream,
          name: `${actor.name}_p${partition}`,
          // A filter that is the whole stream is left out: nats-server before 2.9.15 can miscount a filtered
          // consumer's pending messages and then recount them on every delivery (see `recountsPendingPerDelivery`);
          // an unfiltered one is counted by arithmetic.
          filterSubject: filter === nats.streamSubjects(actor.stream) ? "" : nats.subject(filter),
          ackWait: actor.ackWait ?? ACK_WAIT,
          maxAckPending,
        }
        yield* nats.ensureConsumer(consumer)
        const puller = yield* nats.puller(stream, consumer.name)
        /**
         * One pull of up to `count` messages, each handed to `onMessage` as it arrives; the number that came. The
         * pull ends when they have all come or after `PULL_EXPIRES`, when JetStream says it expired: either way no
         * pull of ours is left waiting on the server once this returns, so none can hand a message to a process
         * that is gone. A pull JetStream ended otherwise (its consumer deleted) is logged, and the consumer made
         * again, a second later.
         */
        return (count: number, onMessage: (msg: PulledMessage) => void, expiresMs = PULL_EXPIRES) =>
          puller.pull(count, expiresMs, onMessage).pipe(
            Effect.tap(() => Effect.andThen(pullSucceeded(partition), passed(partition))),
            Effect.catchTag("PullFailed", (failed) =>
              pullFailed(partition, failed.message).pipe(
                Effect.andThen(Effect.sleep("1 second")),
                Effect.andThen(nats.ensureConsumer(consumer)),
                Effect.as(failed.received),
              ),
            ),
          )
      })

    /**
     * Per partition: one pull at a time, for as many messages as there are free slots (`concurrency`), once at
     * least a quarter of them is free; each message is handled as it arrives, while the pull waits for the rest.
     * The pull thus stays open on the server for up to `PULL_EXPIRES`, and a message published meanwhile reaches its
     * handler at once, with no request of its own; a busy partition makes one pull per many messages. With
     * `concurrency` 1 it is one message per pull, in stream order. A message that arrives while stopping is nak'd
     * back at once; stopping waits for the pull to end and for the messages in hand.
     */
    const consumePartition = (partition: number) =>
      Effect.gen(function* () {
        const pull = yield* consumerFor(partition, concurrency)
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
          stopped
            ? Effect.sync(() => settlements.nak(msg)).pipe(Effect.andThen(slots.release(1)))
            : Effect.ensuring(process(msg, partition), slots.release(1))
        const quarter = Math.max(1, Math.floor(concurrency / 4))
        while (!stopped) {
          yield* available
          const count = yield* takeFree(quarter)
          if (stopped) {
            yield* slots.release(count)
            break
          }
          const got = yield* pull(count, (msg) => void run(start(msg)))
          if (got < count) yield* slots.release(count - got)
        }
        yield* FiberSet.awaitEmpty(inHand)
      }).pipe(Effect.scoped)

    /**
     * Batch mode, while this process leads the partition: one message (a pull expiring after `PULL_EXPIRES`),
     * then as many of those JetStream said were waiting behind it as the batch holds, in one more pull. Only the
     * leader pulls, so those are there and the pull ends at once. A full batch is handled at once; one with room
     * waits its turn among the `handling` batches with room this process handles at a time, then takes what
     * arrived meanwhile: under a steady flow, batches grow and fewer transactions carry the same events.
     */
    const handling =
      actor.batch?.handling === undefined ? undefined : yield* Semaphore.make(actor.batch.handling)
    const consumeBatches = (partition: number, batch: ActorBatch<A, R>, leases: Leases) =>
      Effect.gen(function* () {
        const pull = yield* consumerFor(partition, batch.size)
        while (!stopped) {
          yield* available
          if (!leases.leads(partition)) {
            yield* passed(partition)
            yield* leases.settle(partition)
            yield* Effect.sleep(LEASE_WAIT)
            continue
          }
          const msgs: Array<PulledMessage> = []
          const collect = (msg: PulledMessage) => void msgs.push(msg)
          if ((yield* pull(1, collect)) === 0) continue
          const more = Math.min(msgs[0]!.info.pending, batch.size - 1)
          if (more > 0 && !stopped) yield* pull(more, collect)
          const handle = Effect.suspend(() => {
            if (!stopped && leases.leads(partition)) return processBatch(batch, msgs, partition)
            for (const msg of msgs) settlements.nak(msg)
            return Effect.void
          })
          // What arrived while the batch waited its turn: only those there now (a pull that does not wait).
          const gathered = Effect.suspend(() =>
            stopped ? Effect.void : pull(batch.size - msgs.length, collect, 0),
          )
          if (handling === undefined || msgs.length === batch.size) yield* handle
          else yield* handling.withPermits(1)(Effect.andThen(gathered, handle))
        }
      }).pipe(Effect.scoped)

    const pullLoop = (partition: number, leases: Leases) =>
      Effect.suspend(() =>
        actor.batch === undefined
          ? consumePartition(partition)
          : consumeBatches(partition, actor.batch, leases),
      ).pipe(
        Effect.catchCause((cause) =>
          pullFailed(partition, String(Cause.squash(cause))).pipe(Effect.andThen(Effect.sleep("1 second"))),
        ),
        Effect.repeat({ while: () => !stopped }),
      )

    const partitions = Math.max(actor.partitions, 1)
    const leases: Leases =
      actor.batch === undefined
        ? { leads: () => true, settle: () => Effect.void }
        : // Per stream as well: deployments sharing a database under different subject prefixes lead apart.
          yield* partitionLeases(`${stream}/${actor.name}`, partitions)
    const fibers = yield* Effect.forEach(
      Array.from({ length: partitions }, (_, i) => i),
      (partition) => Effect.forkDetach(pullLoop(partition, leases)),
    )
    // Runs before the leases are released (finalizers run last-added first): partitions are let go only once the
    // work in hand was settled.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => void (stopped = true)).pipe(
        Effect.andThen(Fiber.joinAll(fibers)),
        Effect.timeout(DRAIN_TIMEOUT),
        Effect.catchCause(() => Fiber.interruptAll(fibers)),
        Effect.andThen(Effect.sync(settlements.flush)),
        Effect.andThen(Effect.logInfo("actor drained").pipe(Effect.annotateLogs({ actor: actor.name }))),
      ),
    )
  })

export const actorLayer = <A, R>(actor: ActorDefinition<A, R>) => Layer.effectDiscard(runActor(actor))

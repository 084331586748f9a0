import {
  Cause,
  Data,
  Duration,
  Effect,
  Fiber,
  FiberSet,
  Layer,
  Ref,
  Schema,
  type Scope,
  Semaphore,
} from "effect"
import { Db } from "./Db.ts"
import { type JsMsg, Nats, type StreamBase } from "./Nats.ts"
import { metrics } from "./Observability.ts"

/** What a handler decided: exactly one of these settles every message. */
export type Outcome = Data.TaggedEnum<{
  Ack: Record<never, never>
  Nak: { readonly delay: Duration.Duration }
  Term: { readonly reason: string }
}>
const Outcome = Data.taggedEnum<Outcome>()
export const ack: Outcome = Outcome.Ack()
export const nak = (delay: Duration.Input): Outcome => Outcome.Nak({ delay: Duration.fromInputUnsafe(delay) })
export const term = (reason: string): Outcome => Outcome.Term({ reason })

export interface Delivery {
  /** Subject without the deployment prefix. */
  readonly subject: string
  readonly streamSequence: number
  /** 1 on first delivery. */
  readonly deliveryCount: number
  readonly headers: Readonly<Record<string, string>>
}

export interface ActorDefinition<A, R> {
  /** Durable consumer names derive from it: `<name>_p<partition>`. */
  readonly name: string
  readonly stream: StreamBase
  /** DESIGN.md subject pattern without prefix and without the trailing partition token. */
  readonly subject: string
  /**
   * Publishers append `partitionOf(key, partitions)` as the last subject token. 0: the subject carries no
   * partition token and one consumer takes all of it (for messages that need no order among themselves).
   */
  readonly partitions: number
  readonly schema: Schema.Codec<A, unknown>
  readonly handle: (message: A, delivery: Delivery) => Effect.Effect<Outcome, never, R>
  /** How long a delivered message may stay unsettled before JetStream redelivers it. */
  readonly ackWait?: Duration.Input
  /** A handler that dies this many times on one message gets it terminated and recorded. */
  readonly maxDefects?: number
  /**
   * Messages of one partition handled at once (its consumer's `max_ack_pending`); default 1, which keeps one
   * key's messages in stream order. Raise it only for work whose messages need no order among themselves.
   */
  readonly concurrency?: number
}

/** How long one pull waits for a message; also how long stopping may wait for an idle partition. */
const PULL_EXPIRES = 1000
const DRAIN_TIMEOUT = "8 seconds"
const decoder = new TextDecoder()

/** Backoff for a handler that died: 1 s, 2 s, 4 s ... capped at one minute. */
const defectDelay = (deliveryCount: number) => Duration.seconds(Math.min(2 ** (deliveryCount - 1), 60))

const readHeaders = (msg: JsMsg) => {
  const out: Record<string, string> = {}
  for (const key of msg.headers?.keys() ?? []) out[key] = msg.headers?.get(key) ?? ""
  return out
}

/**
 * Runs an actor over one durable pull consumer per partition, each with `max_ack_pending` 1 unless the actor
 * asks for more concurrency: JetStream hands out one message of a partition at a time, whichever process pulls
 * it, so the messages of one key are handled one at a time and in stream order across every process, while
 * partitions run concurrently.
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
    const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(actor.schema))
    const maxDefects = actor.maxDefects ?? 5
    const stopping = yield* Ref.make(false)

    const recordDeadLetter = (msg: JsMsg, reason: string) =>
      db.query(
        (sql) => sql`
          insert into dead_letters (actor, stream, stream_seq, subject, headers, payload, reason, delivery_count)
          values (${actor.name}, ${stream}, ${msg.seq}, ${nats.unprefixed(msg.subject)},
                  ${sql.json(readHeaders(msg))}, ${Buffer.from(msg.data)}, ${reason}, ${msg.info.deliveryCount})
          on conflict (actor, stream, stream_seq) do nothing`,
      )

    const settle = (msg: JsMsg, outcome: Outcome) =>
      Effect.gen(function* () {
        metrics.actorHandled.inc({ actor: actor.name, outcome: outcome._tag.toLowerCase() })
        switch (outcome._tag) {
          case "Ack":
            return msg.ack()
          case "Nak":
            return msg.nak(Duration.toMillis(outcome.delay))
          case "Term":
            yield* recordDeadLetter(msg, outcome.reason)
            yield* Effect.logWarning("message terminated").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                subject: msg.subject,
                seq: msg.seq,
                reason: outcome.reason,
              }),
            )
            // No reason on the wire: nats-server 2.9 ignores `+TERM <reason>`; the reason is in dead_letters.
            return msg.term()
        }
      })

    const poison = (msg: JsMsg, reason: string) => {
      metrics.actorFailed.inc({ actor: actor.name, reason: "undecodable" })
      return settle(msg, term(`undecodable: ${reason}`))
    }

    const process = (msg: JsMsg, partition: number) =>
      Effect.gen(function* () {
        const deliveryCount = msg.info.deliveryCount
        if (deliveryCount > 1) metrics.actorRedelivered.inc({ actor: actor.name })
        metrics.actorLag.set({ actor: actor.name, partition: String(partition) }, msg.info.pending)
        const decoded = yield* decode(decoder.decode(msg.data)).pipe(Effect.result)
        if (decoded._tag === "Failure") return yield* poison(msg, decoded.failure.message)
        const delivery: Delivery = {
          subject: nats.unprefixed(msg.subject),
          streamSequence: msg.seq,
          deliveryCount,
          headers: readHeaders(msg),
        }
        const outcome = yield* actor.handle(decoded.success, delivery).pipe(
          Effect.catchCause((cause) =>
            Effect.gen(function* () {
              metrics.actorFailed.inc({ actor: actor.name, reason: "defect" })
              yield* Effect.logError("actor handler died").pipe(
                Effect.annotateLogs({
                  actor: actor.name,
                  seq: msg.seq,
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
        yield* settle(msg, outcome)
      }).pipe(
        Effect.withSpan(`Actor.${actor.name}`),
        // Only a drain timeout interrupts a handler: hand the message back at once rather than after ack_wait.
        Effect.onInterrupt(() => Effect.sync(() => msg.nak())),
      )

    const concurrency = actor.concurrency ?? 1

    /**
     * One pull of one message at a time per partition, while fewer than `concurrency` are in hand, each pull
     * expiring after `PULL_EXPIRES`: when the loop stops, no pull of ours is left waiting on the server, so no
     * message can be handed to a process that is gone (it would sit unacknowledged until `ack_wait`); a
     * message that arrives while stopping is nak'd back at once. Stopping waits for the messages in hand.
     */
    const consumePartition = (partition: number) =>
      Effect.gen(function* () {
        const name = `${actor.name}_p${partition}`
        yield* nats.ensureConsumer({
          stream,
          name,
          filterSubject: nats.subject(
            actor.partitions === 0 ? actor.subject : `${actor.subject}.${partition}`,
          ),
          ackWait: actor.ackWait ?? "30 seconds",
          maxAckPending: concurrency,
        })
        const consumer = yield* Effect.promise(() => nats.js.consumers.get(stream, name))
        const permits = yield* Semaphore.make(concurrency)
        const inHand = yield* FiberSet.make()
        while (!(yield* Ref.get(stopping))) {
          yield* permits.take(1)
          const msg = yield* Effect.promise(() => consumer.next({ expires: PULL_EXPIRES }))
          if (msg === null || (yield* Ref.get(stopping))) {
            msg?.nak()
            yield* permits.release(1)
            continue
          }
          yield* FiberSet.run(inHand, process(msg, partition).pipe(Effect.ensuring(permits.release(1))))
        }
        yield* FiberSet.awaitEmpty(inHand)
      }).pipe(Effect.scoped)

    const pullLoop = (partition: number) =>
      consumePartition(partition).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("actor pull failed; retrying").pipe(
            Effect.annotateLogs({ actor: actor.name, partition, cause: String(Cause.squash(cause)) }),
            Effect.andThen(Effect.sleep("1 second")),
          ),
        ),
        Effect.repeat({ while: () => Ref.get(stopping).pipe(Effect.map((stopped) => !stopped)) }),
      )

    const fibers = yield* Effect.forEach(
      Array.from({ length: Math.max(actor.partitions, 1) }, (_, i) => i),
      (partition) => Effect.forkDetach(pullLoop(partition)),
    )
    yield* Effect.addFinalizer(() =>
      Ref.set(stopping, true).pipe(
        Effect.andThen(Fiber.joinAll(fibers)),
        Effect.timeout(DRAIN_TIMEOUT),
        Effect.catchCause(() => Fiber.interruptAll(fibers)),
        Effect.andThen(Effect.logInfo("actor drained").pipe(Effect.annotateLogs({ actor: actor.name }))),
      ),
    )
  })

export const actorLayer = <A, R>(actor: ActorDefinition<A, R>) => Layer.effectDiscard(runActor(actor))

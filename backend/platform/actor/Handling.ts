import { Cause, Duration, Effect, Schema } from "effect"
import {
  type ActorBatch,
  type ActorDefinition,
  type Delivered,
  type Delivery,
  nak,
  type Outcome,
  term,
} from "../ActorDefinition.ts"
import type { PulledMessage } from "../Nats.ts"
import { Nats } from "../Nats.ts"
import { ACCEPTED_AT_HEADER, AcceptedAt } from "../Outbox.ts"
import { continueTrace, TRACEPARENT, Traced } from "../Tracing.ts"
import { type DependencyUnavailable, unavailableIn } from "../Unavailable.ts"
import type { ActorReports } from "./Reports.ts"
import { type ActorSettling, readHeaders } from "./Settling.ts"

const decoder = new TextDecoder()

/** How soon a message whose handler found a dependency unavailable comes back. */
const UNAVAILABLE_DELAY = Duration.seconds(1)

/** Backoff for a handler that died: 1 s, 2 s, 4 s ... capped at one minute. */
const defectDelay = (deliveryCount: number) => Duration.seconds(Math.min(2 ** (deliveryCount - 1), 60))

export type Received<A> = Delivered<A> & { readonly msg: PulledMessage }

/**
 * How an actor handles one message: decoded (JSON, then the schema), handed to its handler, settled with the
 * handler's outcome. A handler that finds a dependency unavailable pauses the actor and has its message back in a
 * second; one that dies is retried with backoff, then terminated.
 */
export const singleHandling = <A, R>(
  actor: ActorDefinition<A, R>,
  reports: ActorReports,
  settling: ActorSettling<R>,
  pause: (unavailable: DependencyUnavailable) => Effect.Effect<void>,
) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const traced = yield* Traced
    // JSON.parse, then the schema: cheaper than `Schema.fromJsonString`, and it runs on every message.
    const decode = Schema.decodeUnknownResult(actor.schema)
    const parse = actor.parse ?? ((text: string) => JSON.parse(text) as unknown)
    const maxDefects = actor.maxDefects ?? 5

    /** Counts the delivery and decodes it: the message with its delivery, or why it cannot be decoded. */
    const received = (
      msg: PulledMessage,
      partition: number,
    ): Received<A> | { readonly undecodable: string } => {
      const deliveryCount = msg.info.deliveryCount
      if (deliveryCount > 1) reports.redelivered()
      reports.lag(partition, msg.info.pending)
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

    /** A handler's failure as an outcome: a pause for an unavailable dependency, else a defect's backoff or term. */
    const failed = (cause: Cause.Cause<unknown>, deliveryCount: number, seq: number) =>
      Effect.gen(function* () {
        const unavailable = unavailableIn(cause)
        if (unavailable !== undefined) {
          yield* pause(unavailable)
          return nak(UNAVAILABLE_DELAY)
        }
        reports.failed("defect")
        yield* Effect.logError("actor handler died").pipe(
          Effect.annotateLogs({ actor: actor.name, seq, deliveryCount, cause: Cause.pretty(cause) }),
        )
        return deliveryCount >= maxDefects
          ? term(`handler died ${deliveryCount} times: ${Cause.pretty(cause).split("\n")[0]}`)
          : nak(defectDelay(deliveryCount))
      })

    /** The single handler's outcome. What it writes to the outbox dates from when the message's work was accepted. */
    const handleOne = (item: Received<A>): Effect.Effect<Outcome, never, R> => {
      const accepted = item.msg.headers?.get(ACCEPTED_AT_HEADER)
      const handled = actor.handle(item.message, item.delivery)
      // Most messages (the webhook attempts) carry no acceptance time: they are handled as they are.
      return (accepted ? Effect.provideService(handled, AcceptedAt, accepted) : handled).pipe(
        Effect.catchCause((cause) => failed(cause, item.delivery.deliveryCount, item.msg.seq)),
      )
    }

    /**
     * While traces are exported, a message is handled in a consumer span continuing the trace of its
     * `traceparent` header (the outbox's, the router's).
     */
    const handleTraced = (item: Received<A>) =>
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
          ? settling.poison(msg, item.undecodable)
          : Effect.flatMap(handleTraced(item), (outcome) => settling.settle(msg, outcome))
      }).pipe(
        // No span per message unless traces are exported: it costs more than a small handler.
        // Only a drain timeout interrupts a handler: hand the message back at once rather than after ack_wait.
        Effect.onInterrupt(() => Effect.sync(() => settling.handBack(msg))),
      )

    return { received, handleOne, process }
  })

export type SingleHandling<A, R> = Effect.Success<ReturnType<typeof singleHandling<A, R>>>

/**
 * One batch: decoded in order, handed whole to the batch handler, each message settled with its outcome after
 * the handler returned. A batch handler that dies (or miscounts) hands the batch to the single handler, one
 * message at a time in stream order, so a poison message only retries (and is terminated) by itself.
 */
export const batchHandling =
  <A, R>(
    actor: ActorDefinition<A, R>,
    batch: ActorBatch<A, R>,
    single: SingleHandling<A, R>,
    reports: ActorReports,
    settling: ActorSettling<R>,
    pause: (unavailable: DependencyUnavailable) => Effect.Effect<void>,
  ) =>
  (msgs: ReadonlyArray<PulledMessage>, partition: number): Effect.Effect<void, never, R> => {
    /** The batch handler's outcomes, or undefined when it died or miscounted (logged and counted). */
    const handleWhole = (items: ReadonlyArray<Delivered<A>>) =>
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
            reports.failed("batch")
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
    const settled = new Set<PulledMessage>()
    const settleOnce = (msg: PulledMessage, outcome: Outcome) =>
      settling.settle(msg, outcome).pipe(Effect.ensuring(Effect.sync(() => settled.add(msg))))
    return Effect.gen(function* () {
      const items: Array<Received<A>> = []
      for (const msg of msgs) {
        const item = single.received(msg, partition)
        if ("undecodable" in item) {
          yield* settling.poison(msg, item.undecodable)
          settled.add(msg)
        } else items.push(item)
      }
      const outcomes = items.length > 1 ? yield* handleWhole(items) : undefined
      for (const [i, item] of items.entries()) {
        let outcome = outcomes?.[i]
        if (outcome === undefined) outcome = yield* single.handleOne(item)
        yield* settleOnce(item.msg, outcome)
      }
    }).pipe(
      Effect.withSpan(`Actor.${actor.name}.batch`),
      // Only a drain timeout interrupts a batch: hand back at once what was not settled.
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          for (const msg of msgs) if (!settled.has(msg)) settling.handBack(msg)
        }),
      ),
    )
  }

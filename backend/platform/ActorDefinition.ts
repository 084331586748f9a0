import { Data, Duration, type Effect, type Schema } from "effect"
import type { StreamBase } from "./Nats.ts"

// What an actor is, as the contexts that define one see it: its subject, schema, handler and outcomes. Running
// one (consumers, leases, settlement) is `Actor.ts`.

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
  /** Messages of the consumer that JetStream had not yet delivered when it delivered this one. */
  readonly pending: number
  /** When JetStream stored the message. */
  readonly publishedAt: Date
  readonly headers: Readonly<Record<string, string>>
  /** The message's exact bytes, as published (the decoded message is what the handler gets first). */
  readonly raw: Uint8Array
}

/** A decoded message with its delivery, as a batch handler gets it. */
export interface Delivered<A> {
  readonly message: A
  readonly delivery: Delivery
}

export interface ActorBatch<A, R> {
  /** Most messages one batch holds (the consumer's `max_ack_pending`). */
  readonly size: number
  /**
   * How many batches with room one process handles at a time (full ones are never held back); the others wait and
   * gather what arrives meanwhile. Unset: every partition's batch at once.
   */
  readonly handling?: number
  /**
   * Handles the batch, in stream order (later messages of a key after earlier ones), and returns one outcome per
   * message, in the same order; messages are settled only after it returns (after its commit).
   */
  readonly handle: (messages: ReadonlyArray<Delivered<A>>) => Effect.Effect<ReadonlyArray<Outcome>, never, R>
}

/** A message the actor gave up on (terminated and kept in `dead_letters`), as its `onTerminated` sees it. */
export interface Terminated {
  /** Subject without the deployment prefix. */
  readonly subject: string
  readonly streamSequence: number
  readonly headers: Readonly<Record<string, string>>
  readonly raw: Uint8Array
  readonly reason: string
}

export interface ActorDefinition<A, R> {
  /** Durable consumer names derive from it: `<name>_p<partition>`. */
  readonly name: string
  readonly stream: StreamBase
  /** Subject pattern (`docs/architecture.md`) without prefix and without the trailing partition token. */
  readonly subject: string
  /**
   * Publishers append `partitionOf(key, partitions)` as the last subject token. 0: the subject carries no
   * partition token and one consumer takes all of it (for messages that need no order among themselves).
   */
  readonly partitions: number
  readonly schema: Schema.Codec<A, unknown>
  /** How a message's JSON text is read before `schema`; `JSON.parse` unless the actor needs another reading. */
  readonly parse?: (text: string) => unknown
  readonly handle: (message: A, delivery: Delivery) => Effect.Effect<Outcome, never, R>
  /**
   * How long a message may go unsettled and unmarked before JetStream hands it to another process (default 4 s). A
   * message is marked in progress while its handler works, so this bounds a takeover, not a handler.
   */
  readonly ackWait?: Duration.Input
  /** A handler that dies this many times on one message gets it terminated and recorded. */
  readonly maxDefects?: number
  /**
   * Messages of one partition handled at once (its consumer's `max_ack_pending`); default 1, which keeps one
   * key's messages in stream order. Raise it only for work whose messages need no order among themselves.
   */
  readonly concurrency?: number
  /**
   * Batch mode: one process at a time leads each partition (a Postgres advisory lock held by a connection of its
   * own) and pulls up to `size` of its messages at once for `batch.handle`. A batch that dies, or answers with the
   * wrong number of outcomes, is handled again one message at a time with `handle`, so one poison message cannot
   * hold back the others. `concurrency` does not apply.
   */
  readonly batch?: ActorBatch<A, R>
  /**
   * Called once a message is terminated (undecodable, or its handler died `maxDefects` times), after it is
   * recorded in `dead_letters`: where the actor's own records should say so too. Its failures are logged only.
   */
  readonly onTerminated?: (terminated: Terminated) => Effect.Effect<void, never, R>
}

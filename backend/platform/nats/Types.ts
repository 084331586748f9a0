import { type Duration, type Effect, Schema } from "effect"

/**
 * What the `Nats` service hands to its callers: plain shapes and tagged errors, none of nats.js's own types, so the
 * client can change underneath. What the server sends and accepts is in `Wire.ts`.
 */

export interface PublishOptions {
  /** Nats-Msg-Id: a repeat inside the stream's duplicate window is stored once. */
  readonly msgID?: string
  readonly headers?: Readonly<Record<string, string>>
}

/** JetStream stored a publish: in which stream, at which sequence, and whether it was a repeat of a stored one. */
export interface PublishAck {
  readonly stream: string
  readonly seq: number
  readonly duplicate: boolean
  readonly domain?: string
}

/** A message's headers, read-only. */
export interface MessageHeaders {
  keys(): Iterable<string>
  get(key: string): string
}

export interface DurableConsumer {
  readonly stream: string
  readonly name: string
  /** Subject filter, already prefixed; empty for the whole stream. */
  readonly filterSubject: string
  readonly ackWait: Duration.Input
  readonly maxAckPending: number
}

/** A message pulled from a durable consumer (`NatsShape.puller`): what an actor reads and how it settles it. */
export interface PulledMessage {
  /** The subject it was published on. */
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: MessageHeaders | undefined
  /** Its stream sequence. */
  readonly seq: number
  readonly info: {
    /** 1 on the first delivery. */
    readonly deliveryCount: number
    /** Messages of the consumer not yet delivered, behind this one. */
    readonly pending: number
    /** When the stream stored it, in nanoseconds since the epoch (to the microsecond: a double holds it). */
    readonly timestampNanos: number
  }
  ack(): void
  /** Hands it back, to be delivered again after `millis` (at once without). */
  nak(millis?: number): void
  term(): void
}

/**
 * Pulls of one durable consumer, one at a time, on one inbox subscription that lives as long as the scope:
 * `pull(batch, expiresMs, onMessage)` asks JetStream for up to `batch` messages, hands each to `onMessage` as it
 * arrives and ends with how many came, once they all came or JetStream ended the pull (it expired), or shortly
 * after its expiry if JetStream never answered it (the second such pull in a row fails). With `expiresMs` 0 it
 * takes only the messages waiting now and ends at once. A message that arrives
 * when no pull of this puller waits for it (one that outlived a pull JetStream never answered) is handed back at
 * once.
 */
export interface Puller {
  readonly pull: (
    batch: number,
    expiresMs: number,
    onMessage: (msg: PulledMessage) => void,
  ) => Effect.Effect<number, PullFailed>
}

/** A stored message as `NatsShape.follow` hands it over: read-only, nothing to settle. */
export interface FollowedMessage {
  readonly subject: string
  readonly seq: number
  readonly data: Uint8Array
  readonly headers: MessageHeaders | undefined
  readonly info: {
    /** When the stream stored it, in nanoseconds since the epoch. */
    readonly timestampNanos: number
  }
}

/** JetStream did not acknowledge a publish (server down, no quorum, timeout). */
export class PublishFailed extends Schema.TaggedError<PublishFailed>()("PublishFailed", {
  message: Schema.String,
}) {}

/**
 * A pull JetStream ended otherwise than by expiring (the consumer was deleted, the request refused) or never
 * answered; `received` messages had already been handed over.
 */
export class PullFailed extends Schema.TaggedError<PullFailed>()("PullFailed", {
  message: Schema.String,
  received: Schema.Number,
}) {}

/** A durable consumer as JetStream reports it (`NatsShape.streamReports`). */
export interface ConsumerReport {
  readonly name: string
  /** Messages matching its filter not yet delivered. */
  readonly pending: number
  /** Messages delivered and not yet acknowledged. */
  readonly ackPending: number
  /** Messages delivered more than once and not yet acknowledged. */
  readonly redelivered: number
  /** When the oldest message it has not acknowledged was stored; undefined when it is caught up. */
  readonly oldestUnacknowledgedAt: Date | undefined
  /** When it last delivered a message or had one acknowledged; undefined when it never has. */
  readonly lastActiveAt: Date | undefined
}

/** A stream as JetStream reports it, with its limits (-1: none) and its durable consumers. */
export interface StreamReport {
  readonly name: string
  readonly subjects: ReadonlyArray<string>
  readonly messages: number
  readonly bytes: number
  readonly firstSeq: number
  readonly lastSeq: number
  readonly limits: {
    readonly maxMessages: number
    readonly maxBytes: number
    readonly maxAgeSeconds: number
    readonly discard: "old" | "new"
  }
  readonly consumers: ReadonlyArray<ConsumerReport>
}

export interface StreamState {
  readonly lastSeq: number
  /**
   * When its oldest message kept was stored, once it dropped older ones (age or size limits, a purge); when it
   * dropped them all, when its last message was stored. Undefined while it has every message it was given.
   */
  readonly keptSince: Date | undefined
}

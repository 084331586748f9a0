import { Context, type Duration, Effect, Layer, type Scope } from "effect"
import { AppConfig } from "./Config.ts"
import { NatsClient } from "./nats/Client.ts"
import { makeProvisioning } from "./nats/Provisioning.ts"
import { makePublishing } from "./nats/Publishing.ts"
import { puller } from "./nats/Puller.ts"
import { makeReading } from "./nats/Reading.ts"
import { type StreamBase, StreamTable, type Streams } from "./nats/StreamTable.ts"
import {
  type DurableConsumer,
  type FollowedMessage,
  type PublishAck,
  type PublishFailed,
  type PublishOptions,
  type Puller,
  type StreamReport,
  type StreamState,
} from "./nats/Types.ts"

export type {
  ConsumerReport,
  DurableConsumer,
  FollowedMessage,
  MessageHeaders,
  PublishAck,
  PublishOptions,
  PulledMessage,
  Puller,
  StreamReport,
  StreamState,
} from "./nats/Types.ts"
export { PublishFailed, PullFailed } from "./nats/Types.ts"
export { type StreamBase, type StreamSpec, type Streams, StreamTable } from "./nats/StreamTable.ts"

/**
 * The deployment's streams and subjects, acknowledged and best-effort publishes, durable consumers and followers.
 * Callers get no nats.js object: the protocol code behind it lives in `nats/`.
 */
export interface NatsShape {
  readonly prefix: string
  /** A subject (`docs/architecture.md`) with the deployment's prefix in front. */
  readonly subject: (name: string) => string
  /** A subject with the deployment's prefix taken off (for logs and decoding). */
  readonly unprefixed: (subject: string) => string
  readonly streamName: (base: StreamBase) => string
  /** Every subject the stream holds, without the deployment prefix (`eligibility.>`). */
  readonly streamSubjects: (base: StreamBase) => string
  readonly publish: (subject: string, data: Uint8Array, options?: PublishOptions) => Effect.Effect<PublishAck>
  /**
   * Many `publish`es at once, done when JetStream acknowledged them all: one wait for the lot, not a fiber per
   * message. Messages that share a `key` go out in the order given, each once the one before it was acknowledged
   * (so a failure cannot leave a later one stored without it); the first of every key go out at once.
   */
  readonly publishAll: (
    messages: ReadonlyArray<{
      readonly subject: string
      readonly data: Uint8Array
      readonly options?: PublishOptions
      readonly key?: string
    }>,
  ) => Effect.Effect<void>
  /** `publish` for a caller that answers for it: a publish not acknowledged within `timeout` fails. */
  readonly tryPublish: (
    subject: string,
    data: Uint8Array,
    options: PublishOptions & { readonly timeout: Duration.Input },
  ) => Effect.Effect<PublishAck, PublishFailed>
  /**
   * A core publish (no JetStream acknowledgement), for messages a reader may miss: sent at the end of the turn of
   * the event loop with the others of that turn, dropped when the connection is closed.
   */
  readonly publishUnacknowledged: (subject: string, data: Uint8Array) => void
  readonly ensureStreams: Effect.Effect<void>
  /** Whether the stream (its actual name) exists. */
  readonly streamExists: (stream: string) => Effect.Effect<boolean>
  readonly ensureConsumer: (consumer: DurableConsumer) => Effect.Effect<void>
  /** Pulls of the durable consumer `consumer` of `stream` (a stream's actual name) while the scope is open. */
  readonly puller: (stream: string, consumer: string) => Effect.Effect<Puller, never, Scope.Scope>
  /**
   * Follows a stream's messages matching `subject` (already prefixed) with an ordered consumer, from `since`
   * or from now on, for as long as the scope is open.
   */
  readonly follow: (
    stream: string,
    subject: string,
    since: Date | undefined,
    onMessage: (msg: FollowedMessage) => void,
  ) => Effect.Effect<void, never, Scope.Scope>
  /**
   * What a stream holds now: its last sequence, and since when it holds every message it was given (undefined
   * when it never dropped one), which is how far back a reader can go.
   */
  readonly streamState: (stream: string) => Effect.Effect<StreamState>
  /**
   * The stored messages matching `subject` (already prefixed), stored at `since` or later and at sequence `upTo`
   * at most, oldest first: an ordered consumer read until it has caught up with `upTo`. One subject: servers
   * before 2.10 take no list of filters.
   */
  readonly readStored: (
    stream: string,
    subject: string,
    since: Date,
    upTo: number,
  ) => Effect.Effect<ReadonlyArray<FollowedMessage>>
  /**
   * A durable consumer's progress, as stream sequences: every message at or below `ackFloor` is acknowledged,
   * and none above `delivered` was handed out yet. Undefined when the consumer does not exist.
   */
  readonly consumerProgress: (
    stream: string,
    consumer: string,
  ) => Effect.Effect<{ readonly ackFloor: number; readonly delivered: number } | undefined>
  /**
   * The stored messages matching `subject` (already prefixed) from sequence `from` to `upTo`, oldest first, at
   * most `max` of them: an ordered consumer started at `from`. Messages the stream no longer holds are skipped.
   */
  readonly readRange: (
    stream: string,
    subject: string,
    from: number,
    upTo: number,
    max: number,
  ) => Effect.Effect<ReadonlyArray<FollowedMessage>>
  /**
   * Every provisioned stream with its figures, limits and durable consumers, as JetStream reports them now (a
   * stream not created yet is left out). One info request per stream and per consumer, and one message lookup per
   * consumer behind.
   */
  readonly streamReports: Effect.Effect<ReadonlyArray<StreamReport>>
  readonly ping: Effect.Effect<void>
}

/** Whether some subject matches both patterns (`*` one token, `>` one or more trailing tokens). */
export const subjectsOverlap = (a: string, b: string) => {
  const x = a.split(".")
  const y = b.split(".")
  for (let i = 0; ; i++) {
    const p = x[i]
    const q = y[i]
    if (p === undefined || q === undefined) return p === q
    if (p === ">" || q === ">") return true
    if (p !== "*" && q !== "*" && p !== q) return false
  }
}

export const streamNameFor = (prefix: string, base: StreamBase) =>
  prefix === "" ? base : `${prefix.replace(/[^A-Za-z0-9]/g, "_").toUpperCase()}_${base}`

/**
 * The NATS service, in parts by use: publishing (`nats/Publishing.ts`), provisioning of streams and consumers
 * (`nats/Provisioning.ts`) and reading (`nats/Reading.ts`); the naming with the deployment's prefix is its own.
 */
export class Nats extends Context.Service<Nats, NatsShape>()("partner-service/platform/Nats") {
  static readonly layer = Layer.effect(
    Nats,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const streams = yield* StreamTable
      const prefix = config.natsSubjectPrefix
      const { connection } = yield* NatsClient
      const subject = (name: string) => (prefix === "" ? name : `${prefix}.${name}`)
      const unprefixed = (s: string) =>
        prefix !== "" && s.startsWith(`${prefix}.`) ? s.slice(prefix.length + 1) : s
      const streamName = (base: StreamBase) => streamNameFor(prefix, base)
      const streamSubjects = (base: StreamBase) => `${streams[base]?.subjects}.>`

      return Nats.of({
        prefix,
        subject,
        unprefixed,
        streamName,
        streamSubjects,
        ...(yield* makePublishing),
        ...(yield* makeProvisioning({ subject, streamName, streamSubjects })),
        ...(yield* makeReading(streamName)),
        puller: (stream, consumer) => puller(connection, stream, consumer),
        ping: Effect.promise(() => connection.flush()),
      })
    }),
  ).pipe(Layer.provideMerge(NatsClient.layer))

  /** `layer` on `streams`, their byte limits read from the settings. */
  static readonly layerOn = (streams: Streams) => Nats.layer.pipe(Layer.provide(StreamTable.layerOn(streams)))
}

import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream"
import { Context, Duration, Effect, identity, Layer, type Scope, Stream } from "effect"
import { AppConfig } from "./Config.ts"
import { NatsClient } from "./nats/Client.ts"
import { perTurnBatch } from "./PerTurnBatch.ts"
import { acknowledgedPublisher } from "./nats/Publisher.ts"
import { puller } from "./nats/Puller.ts"
import { DependencyUnavailable } from "./Unavailable.ts"
import { isNotFound, streamReport } from "./nats/Reports.ts"
import {
  type DurableConsumer,
  type FollowedMessage,
  type PublishAck,
  PublishFailed,
  type PublishOptions,
  type Puller,
  type StreamReport,
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
} from "./nats/Types.ts"
export { PublishFailed, PullFailed } from "./nats/Types.ts"

/** A stream the deployment provisions: the first token of every subject it holds, and what it does when full. */
export interface StreamSpec {
  readonly subjects: string
  /** At its byte limit, `new` refuses a new message and `old` drops the oldest ones. */
  readonly discard: "new" | "old"
}

/**
 * The streams a deployment provisions, by base name (the deployment prefix goes in front of it). `Nats.layerOn`
 * takes them from the composition root.
 */
export type Streams = Readonly<Record<string, StreamSpec>>
export class StreamTable extends Context.Service<StreamTable, Streams>()(
  "partner-service/platform/StreamTable",
) {}
export type StreamBase = string

/** How long `publish` waits for JetStream's acknowledgement (nats.js's default for `js.publish`). */
const PUBLISH_TIMEOUT_MS = 5000

const nanos = (d: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(d)) * 1_000_000
const STREAM_MAX_AGE = nanos("7 days")
const DUPLICATE_WINDOW = nanos("2 minutes")

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

export interface StreamState {
  readonly lastSeq: number
  /**
   * When its oldest message kept was stored, once it dropped older ones (age or size limits, a purge); when it
   * dropped them all, when its last message was stored. Undefined while it has every message it was given.
   */
  readonly keptSince: Date | undefined
}

/**
 * A publish JetStream did not acknowledge: the server is away, a stream is electing a leader, or a stream that
 * refuses new messages is full. Each passes by itself, so the publish is for its caller to retry.
 */
const notAcknowledged = (error: Error) =>
  new DependencyUnavailable({ dependency: "nats", reason: error.message })

/**
 * A read of JetStream's state (a stream's info, its stored messages): when the server is away or does not answer
 * in time, the read dies with `DependencyUnavailable`, which callers report as a 503 or retry, never as a bug.
 */
const read = <A>(run: () => Promise<A>) =>
  Effect.promise(() =>
    run().catch((error: unknown) =>
      Promise.reject(
        new DependencyUnavailable({
          dependency: "nats",
          reason: error instanceof Error ? error.message : String(error),
        }),
      ),
    ),
  )

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

const streamConfig = (
  name: string,
  subjects: Array<string>,
  replicas: number,
  maxBytes: number,
  discard: DiscardPolicy,
): Partial<StreamConfig> & { name: string } => ({
  name,
  subjects,
  retention: RetentionPolicy.Limits,
  storage: StorageType.File,
  discard,
  max_age: STREAM_MAX_AGE,
  max_bytes: maxBytes,
  duplicate_window: DUPLICATE_WINDOW,
  num_replicas: replicas,
})

const differs = (want: Partial<StreamConfig>, have: StreamConfig) =>
  JSON.stringify(want.subjects) !== JSON.stringify(have.subjects) ||
  want.max_age !== have.max_age ||
  want.max_bytes !== have.max_bytes ||
  want.duplicate_window !== have.duplicate_window ||
  want.discard !== have.discard ||
  want.num_replicas !== have.num_replicas

export class Nats extends Context.Service<Nats, NatsShape>()("partner-service/platform/Nats") {
  static readonly layer = Layer.effect(
    Nats,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const streams = yield* StreamTable
      const prefix = config.natsSubjectPrefix
      const { connection, js, jsm } = yield* NatsClient
      const subject = (name: string) => (prefix === "" ? name : `${prefix}.${name}`)
      const unprefixed = (s: string) =>
        prefix !== "" && s.startsWith(`${prefix}.`) ? s.slice(prefix.length + 1) : s
      const streamName = (base: StreamBase) => streamNameFor(prefix, base)
      const streamSubjects = (base: StreamBase) => `${streams[base]?.subjects}.>`

      const acknowledged = yield* acknowledgedPublisher(connection)
      const publish = (name: string, data: Uint8Array, options: PublishOptions = {}) =>
        Effect.callback<PublishAck>((resume) =>
          acknowledged(name, data, options, PUBLISH_TIMEOUT_MS, (error, ack) =>
            resume(error === undefined ? Effect.succeed(ack!) : Effect.die(notAcknowledged(error))),
          ),
        )
      const publishAll: NatsShape["publishAll"] = (messages) =>
        messages.length === 0
          ? Effect.void
          : Effect.callback<void>((resume) => {
              let left = messages.length
              let failed = false
              // A key's messages after its first, sent from the acknowledgement of the one before.
              const following = new Map<string, Array<(typeof messages)[number]>>()
              const send = (m: (typeof messages)[number]) =>
                acknowledged(m.subject, m.data, m.options ?? {}, PUBLISH_TIMEOUT_MS, (error) => {
                  if (failed) return
                  if (error !== undefined) {
                    failed = true
                    return resume(Effect.die(notAcknowledged(error)))
                  }
                  if (--left === 0) return resume(Effect.void)
                  const next = m.key === undefined ? undefined : following.get(m.key)?.shift()
                  if (next !== undefined) send(next)
                })
              for (const m of messages) {
                const queue = m.key === undefined ? undefined : following.get(m.key)
                if (queue !== undefined) queue.push(m)
                else {
                  if (m.key !== undefined) following.set(m.key, [])
                  send(m)
                }
              }
            })
      const tryPublish = (
        name: string,
        data: Uint8Array,
        options: PublishOptions & { readonly timeout: Duration.Input },
      ) =>
        Effect.callback<PublishAck, PublishFailed>((resume) =>
          acknowledged(
            name,
            data,
            options,
            Duration.toMillis(Duration.fromInputUnsafe(options.timeout)),
            (error, ack) =>
              resume(
                error === undefined
                  ? Effect.succeed(ack!)
                  : Effect.fail(new PublishFailed({ message: String(error) })),
              ),
          ),
        )

      const ensureStream = Effect.fn("Nats.ensureStream")(function* (base: StreamBase) {
        const want = streamConfig(
          streamName(base),
          [subject(streamSubjects(base))],
          config.natsStreamReplicas,
          (config.streamMaxBytes as Readonly<Record<string, number | undefined>>)[base] ?? -1,
          streams[base]?.discard === "old" ? DiscardPolicy.Old : DiscardPolicy.New,
        )
        const have = yield* Effect.promise(() =>
          jsm.streams
            .info(want.name)
            .catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error))),
        )
        if (have === undefined) {
          yield* Effect.promise(() => jsm.streams.add(want))
          yield* Effect.logInfo("stream created").pipe(Effect.annotateLogs({ stream: want.name }))
        } else if (differs(want, have.config)) {
          yield* Effect.promise(() => jsm.streams.update(want.name, { ...have.config, ...want }))
          yield* Effect.logInfo("stream updated").pipe(Effect.annotateLogs({ stream: want.name }))
        }
      })

      const ensureConsumer = Effect.fn("Nats.ensureConsumer")(function* (consumer: DurableConsumer) {
        const want = {
          durable_name: consumer.name,
          // Left out when empty: nats.js would put an empty token in the create request's subject.
          ...(consumer.filterSubject === "" ? {} : { filter_subject: consumer.filterSubject }),
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ack_wait: nanos(consumer.ackWait),
          max_ack_pending: consumer.maxAckPending,
          max_deliver: -1,
        }
        const have = yield* Effect.promise(() =>
          jsm.consumers
            .info(consumer.stream, consumer.name)
            .catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error))),
        )
        if (have === undefined) {
          yield* Effect.promise(() => jsm.consumers.add(consumer.stream, want))
          return
        }
        // A consumer made with a filter keeps it: nats.js cannot send an update that clears one (an empty filter
        // ends up as an empty token of the request's subject, which the server does not answer as an update).
        const filter =
          consumer.filterSubject === "" ? (have.config.filter_subject ?? "") : consumer.filterSubject
        if (
          (have.config.filter_subject ?? "") !== filter ||
          have.config.ack_wait !== want.ack_wait ||
          have.config.max_ack_pending !== want.max_ack_pending
        ) {
          const { ack_policy: _a, deliver_policy: _d, durable_name: _n, ...mutable } = want
          yield* Effect.promise(() =>
            jsm.consumers.update(consumer.stream, consumer.name, {
              ...mutable,
              ...(filter === "" ? {} : { filter_subject: filter }),
            }),
          )
        }
      })

      const follow = (
        stream: string,
        filter: string,
        since: Date | undefined,
        onMessage: (msg: FollowedMessage) => void,
      ) =>
        Effect.gen(function* () {
          const consumer = yield* Effect.promise(() =>
            js.consumers.get(stream, {
              filter_subjects: filter,
              ...(since
                ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() }
                : { deliver_policy: DeliverPolicy.New }),
            }),
          )
          const messages = yield* Effect.acquireRelease(
            Effect.promise(() => consumer.consume()),
            (messages) => Effect.promise(() => messages.close()).pipe(Effect.ignore),
          )
          yield* Stream.fromAsyncIterable(messages, identity).pipe(
            Stream.runForEach((msg) => Effect.sync(() => onMessage(msg))),
            Effect.orDie,
            Effect.forkScoped,
          )
        })

      // Sent at the end of the turn of the event loop, together with the others of that turn: one socket write.
      // What is queued when the layer closes is sent before the connection is.
      const unacknowledged = yield* Effect.acquireRelease(
        Effect.sync(() =>
          perTurnBatch<readonly [string, Uint8Array]>((items) => {
            for (const [name, data] of items) {
              try {
                connection.publish(name, data)
              } catch {
                // Best effort: a closed connection drops it.
              }
            }
          }),
        ),
        (batch) => Effect.sync(batch.flush),
      )
      const publishUnacknowledged = (name: string, data: Uint8Array) => unacknowledged.add([name, data])

      const streamExists = (stream: string) =>
        read(() =>
          jsm.streams.info(stream).then(
            () => true,
            (error: unknown) => (isNotFound(error) ? false : Promise.reject(error)),
          ),
        )

      const streamState = (stream: string) =>
        read(() => jsm.streams.info(stream)).pipe(
          Effect.map((info): StreamState => ({
            lastSeq: info.state.last_seq,
            keptSince:
              info.state.first_seq <= 1
                ? undefined
                : new Date(info.state.messages === 0 ? info.state.last_ts : info.state.first_ts),
          })),
        )

      const consumerProgress = (stream: string, consumer: string) =>
        read(() =>
          jsm.consumers.info(stream, consumer).then(
            (info) => ({ ackFloor: info.ack_floor.stream_seq, delivered: info.delivered.stream_seq }),
            (error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error)),
          ),
        )

      /**
       * The stored messages of `filter` from where `start` says, up to `upTo` (a stream sequence) and at most `max`.
       * The read ends after as many messages as matched when it started, counted by the server (a message's own
       * pending count is not exact on every server). None matching: a consume would wait for a message that may
       * never come.
       */
      const readFrom = (
        stream: string,
        filter: string,
        start:
          | { readonly deliver_policy: typeof DeliverPolicy.StartTime; readonly opt_start_time: string }
          | { readonly deliver_policy: typeof DeliverPolicy.StartSequence; readonly opt_start_seq: number },
        upTo: number,
        max = Infinity,
      ) =>
        read(async () => {
          const found: Array<FollowedMessage> = []
          if (max <= 0) return found
          const consumer = await js.consumers.get(stream, { filter_subjects: filter, ...start })
          const matching = (await consumer.info()).num_pending
          if (matching === 0) return found
          const messages = await consumer.consume()
          try {
            let read = 0
            for await (const msg of messages) {
              if (msg.seq > upTo) break
              found.push(msg)
              if (msg.seq === upTo || ++read >= matching || found.length >= max) break
            }
          } finally {
            await messages.close()
          }
          return found
        })
      const readStored = (stream: string, filter: string, since: Date, upTo: number) =>
        readFrom(
          stream,
          filter,
          { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() },
          upTo,
        )
      const readRange = (stream: string, filter: string, from: number, upTo: number, max: number) =>
        from > upTo
          ? Effect.succeed([])
          : readFrom(
              stream,
              filter,
              { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from },
              upTo,
              max,
            )

      const streamReports = read(() =>
        Promise.all(Object.keys(streams).map((base) => streamReport(jsm, streamName(base)))).then((all) =>
          all.filter((s) => s !== undefined),
        ),
      ).pipe(Effect.withSpan("Nats.streamReports"))

      return Nats.of({
        prefix,
        subject,
        unprefixed,
        streamName,
        streamSubjects,
        publish,
        publishAll,
        tryPublish,
        publishUnacknowledged,
        ensureStreams: Effect.forEach(Object.keys(streams), ensureStream, {
          discard: true,
        }),
        ensureConsumer,
        streamExists,
        puller: (stream, consumer) => puller(connection, stream, consumer),
        follow,
        streamState,
        readStored,
        consumerProgress,
        readRange,
        streamReports,
        ping: Effect.promise(() => connection.flush()),
      })
    }),
  ).pipe(Layer.provideMerge(NatsClient.layer))

  /** `layer` on `streams`. */
  static readonly layerOn = (streams: Streams) =>
    Nats.layer.pipe(Layer.provide(Layer.succeed(StreamTable, streams)))
}

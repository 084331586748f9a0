import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type PubAck,
  RetentionPolicy,
  StorageType,
  type StoredMsg,
  type StreamConfig,
} from "@nats-io/jetstream"
import {
  connect,
  createInbox,
  type Msg,
  type MsgHdrs,
  headers as natsHeaders,
  type NatsConnection,
  type Status,
} from "@nats-io/transport-node"
import { Context, Duration, Effect, Layer, Schema, type Scope } from "effect"
import { AppConfig } from "./Config.ts"
import { perTurn } from "./Turn.ts"

export type { JsMsg, PubAck, StoredMsg }

/** The streams of DESIGN.md: base name and the first token of every subject it holds. */
export const Streams = {
  INGEST: "ingest",
  ROSTER: "roster",
  ELIGIBILITY: "eligibility",
  EVENTS: "events",
  WEBHOOKS: "webhooks",
} as const
export type StreamBase = keyof typeof Streams

/** How long `publish` waits for JetStream's acknowledgement (nats.js's default for `js.publish`). */
const PUBLISH_TIMEOUT_MS = 5000
const decoder = new TextDecoder()

const nanos = (d: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(d)) * 1_000_000
const STREAM_MAX_AGE = nanos("7 days")
const DUPLICATE_WINDOW = nanos("2 minutes")

export interface PublishOptions {
  /** Nats-Msg-Id: a repeat inside the stream's duplicate window is stored once. */
  readonly msgID?: string
  readonly headers?: Readonly<Record<string, string>>
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
  readonly headers: MsgHdrs | undefined
  /** Its stream sequence. */
  readonly seq: number
  readonly info: {
    /** 1 on the first delivery. */
    readonly deliveryCount: number
    /** Messages of the consumer not yet delivered, behind this one. */
    readonly pending: number
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
 * after its expiry if JetStream never answered it (the second such pull in a row fails). A message that arrives
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

export interface NatsShape {
  readonly connection: NatsConnection
  readonly js: JetStreamClient
  readonly jsm: JetStreamManager
  readonly prefix: string
  /** A DESIGN.md subject with the deployment's prefix in front. */
  readonly subject: (name: string) => string
  /** A DESIGN.md subject with the deployment's prefix taken off (for logs and decoding). */
  readonly unprefixed: (subject: string) => string
  readonly streamName: (base: StreamBase) => string
  readonly publish: (subject: string, data: Uint8Array, options?: PublishOptions) => Effect.Effect<PubAck>
  /**
   * Many `publish`es at once, done when JetStream acknowledged them all: one wait for the lot, not a fiber per
   * message.
   */
  readonly publishAll: (
    messages: ReadonlyArray<{
      readonly subject: string
      readonly data: Uint8Array
      readonly options?: PublishOptions
    }>,
  ) => Effect.Effect<void>
  /** `publish` for a caller that answers for it: a publish not acknowledged within `timeout` fails. */
  readonly tryPublish: (
    subject: string,
    data: Uint8Array,
    options: PublishOptions & { readonly timeout: Duration.Input },
  ) => Effect.Effect<PubAck, PublishFailed>
  readonly ensureStreams: Effect.Effect<void>
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
    onMessage: (msg: JsMsg) => void,
  ) => Effect.Effect<void, never, Scope.Scope>
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
 * Whether a nats-server version is older than 2.9.15. Those recount a filtered consumer's pending messages (a scan
 * of the stream block it is in) on every message they deliver, once the count was taken from partway through the
 * block that holds the whole backlog (by a consumer info call, such as our start-up's or an operator's, or when
 * the server loads its consumers). In the webhook bench, a backlog drained by restarted workers went at 540-2,000
 * deliveries a second instead of ~5,000. Upstream fixed it in 2.9.15 ("Do not re-calculate NumPending on consumer
 * info calls"); Debian 12 packages 2.9.10.
 */
export const recountsPendingPerDelivery = (version: string) => {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version)
  if (match === null) return false
  const [major, minor, patch] = match.slice(1).map(Number) as [number, number, number]
  return major < 2 || (major === 2 && (minor < 9 || (minor === 9 && patch < 15)))
}

export const isNotFound = (error: unknown) =>
  error instanceof JetStreamApiError &&
  (error.code === JetStreamApiCodes.StreamNotFound || error.code === JetStreamApiCodes.ConsumerNotFound)

const streamConfig = (
  name: string,
  subjects: Array<string>,
  replicas: number,
): Partial<StreamConfig> & { name: string } => ({
  name,
  subjects,
  retention: RetentionPolicy.Limits,
  storage: StorageType.File,
  discard: DiscardPolicy.Old,
  max_age: STREAM_MAX_AGE,
  duplicate_window: DUPLICATE_WINDOW,
  num_replicas: replicas,
})

const differs = (want: Partial<StreamConfig>, have: StreamConfig) =>
  JSON.stringify(want.subjects) !== JSON.stringify(have.subjects) ||
  want.max_age !== have.max_age ||
  want.duplicate_window !== have.duplicate_window ||
  want.discard !== have.discard ||
  want.num_replicas !== have.num_replicas

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

export class Nats extends Context.Service<Nats, NatsShape>()("partner-service/platform/Nats") {
  static readonly layer = Layer.effect(
    Nats,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const prefix = config.natsSubjectPrefix
      const servers = config.natsUrl.split(",").map((s) => s.trim())
      const connection = yield* Effect.acquireRelease(
        Effect.promise(() =>
          connect({
            servers,
            name: "partner-service",
            maxReconnectAttempts: -1,
            // No stack captured for every request's error objects: they cost more than the publish itself.
            noAsyncTraces: true,
            reconnectTimeWait: 1000,
            pingInterval: 10_000,
          }),
        ),
        (nc) =>
          Effect.promise(() => nc.drain()).pipe(
            Effect.timeout("5 seconds"),
            Effect.catchCause(() => Effect.promise(() => nc.close())),
          ),
      )
      const version = connection.info?.version ?? "unknown"
      yield* Effect.logInfo("nats connected").pipe(
        Effect.annotateLogs({ server: connection.getServer(), version }),
      )
      // Info, not a warning: every CLI command connects too, and would print it.
      if (recountsPendingPerDelivery(version)) {
        yield* Effect.logInfo(
          "this nats-server recounts a consumer's pending messages on every delivery after a consumer info call " +
            "(fixed in 2.9.15): draining a backlog after a restart can be several times slower",
        ).pipe(Effect.annotateLogs({ version }))
      }
      yield* watchStatus(connection)

      const js = jetstream(connection)
      const jsm = yield* Effect.promise(() => jetstreamManager(connection))
      const subject = (name: string) => (prefix === "" ? name : `${prefix}.${name}`)
      const unprefixed = (s: string) =>
        prefix !== "" && s.startsWith(`${prefix}.`) ? s.slice(prefix.length + 1) : s
      const streamName = (base: StreamBase) => streamNameFor(prefix, base)

      const acknowledged = yield* acknowledgedPublisher(connection)
      const publish = (name: string, data: Uint8Array, options: PublishOptions = {}) =>
        Effect.callback<PubAck>((resume) =>
          acknowledged(name, data, options, PUBLISH_TIMEOUT_MS, (error, ack) =>
            resume(error === undefined ? Effect.succeed(ack!) : Effect.die(error)),
          ),
        )
      const publishAll: NatsShape["publishAll"] = (messages) =>
        messages.length === 0
          ? Effect.void
          : Effect.callback<void>((resume) => {
              let left = messages.length
              let failed = false
              for (const m of messages) {
                acknowledged(m.subject, m.data, m.options ?? {}, PUBLISH_TIMEOUT_MS, (error) => {
                  if (failed) return
                  if (error !== undefined) {
                    failed = true
                    return resume(Effect.die(error))
                  }
                  if (--left === 0) resume(Effect.void)
                })
              }
            })
      const tryPublish = (
        name: string,
        data: Uint8Array,
        options: PublishOptions & { readonly timeout: Duration.Input },
      ) =>
        Effect.callback<PubAck, PublishFailed>((resume) =>
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
          [subject(`${Streams[base]}.>`)],
          config.natsStreamReplicas,
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
        onMessage: (msg: JsMsg) => void,
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
          yield* Effect.forkScoped(
            Effect.promise(async () => {
              for await (const msg of messages) onMessage(msg)
            }),
          )
        })

      return Nats.of({
        connection,
        js,
        jsm,
        prefix,
        subject,
        unprefixed,
        streamName,
        publish,
        publishAll,
        tryPublish,
        ensureStreams: Effect.forEach(Object.keys(Streams) as Array<StreamBase>, ensureStream, {
          discard: true,
        }),
        ensureConsumer,
        puller: (stream, consumer) => puller(connection, stream, consumer),
        follow,
        ping: Effect.promise(() => connection.flush()),
      })
    }),
  )
}

/**
 * JetStream publishes as the server sees them: a core publish with a reply subject, the acknowledgement matched
 * by token on one inbox subscription per connection, deadlines (on the monotonic clock) checked by one timer.
 * nats.js's `js.publish` makes a request object and a timer per publish and, on every acknowledgement, an error
 * object with a stack trace (its request's `cancel`): a measurable share of the CPU of a publish.
 */
const acknowledgedPublisher = (connection: NatsConnection) =>
  Effect.gen(function* () {
    interface Waiting {
      readonly subject: string
      readonly deadline: number
      readonly done: (error: Error | undefined, ack: PubAck | undefined) => void
    }
    const inbox = createInbox()
    const waiting = new Map<string, Waiting>()
    let next = 0
    const settle = (token: string, error: Error | undefined, ack?: PubAck) => {
      const entry = waiting.get(token)
      if (entry === undefined) return
      waiting.delete(token)
      entry.done(error, ack)
    }
    connection.subscribe(`${inbox}.*`, {
      callback: (error, msg) => {
        // The subscription ends with the connection; publishes still waiting time out.
        if (error !== null) return
        const token = msg.subject.slice(inbox.length + 1)
        const entry = waiting.get(token)
        if (entry === undefined) return
        if (msg.headers?.code === 503) {
          return settle(token, new Error(`no JetStream stream holds ${entry.subject}`))
        }
        try {
          const answer = JSON.parse(decoder.decode(msg.data)) as {
            readonly stream?: string
            readonly seq?: number
            readonly duplicate?: boolean
            readonly domain?: string
            readonly error?: { readonly code?: number; readonly description?: string }
          }
          if (answer.error !== undefined || typeof answer.stream !== "string" || answer.stream === "") {
            return settle(
              token,
              new Error(`JetStream refused the publish: ${answer.error?.description ?? "invalid ack"}`),
            )
          }
          settle(token, undefined, {
            stream: answer.stream,
            seq: answer.seq ?? 0,
            duplicate: answer.duplicate === true,
            ...(answer.domain === undefined ? {} : { domain: answer.domain }),
          })
        } catch (parseError) {
          settle(
            token,
            new Error(`JetStream answered the publish with something else: ${String(parseError)}`),
          )
        }
      },
    })
    /** Publishes of one turn of the event loop, handed to the client together (`perTurn`): one socket write. */
    const outgoing = perTurn<{
      token: string
      subject: string
      data: Uint8Array
      headers: MsgHdrs | undefined
    }>((items) => {
      for (const { token, subject, data, headers } of items) {
        try {
          connection.publish(subject, data, {
            reply: `${inbox}.${token}`,
            ...(headers === undefined ? {} : { headers }),
          })
        } catch (error) {
          settle(token, error instanceof Error ? error : new Error(String(error)))
        }
      }
    })
    const sweep = yield* Effect.acquireRelease(
      Effect.sync(() =>
        setInterval(() => {
          const now = performance.now()
          for (const [token, entry] of waiting) {
            if (entry.deadline <= now)
              settle(token, new Error(`no JetStream acknowledgement for ${entry.subject}`))
          }
        }, 50),
      ),
      (timer) => Effect.sync(() => clearInterval(timer)),
    )
    sweep.unref()
    return (
      subject: string,
      data: Uint8Array,
      options: PublishOptions,
      timeoutMs: number,
      done: Waiting["done"],
    ) => {
      let h: MsgHdrs | undefined
      if (options.msgID !== undefined || options.headers !== undefined) {
        h = natsHeaders()
        for (const [k, v] of Object.entries(options.headers ?? {})) h.set(k, v)
        if (options.msgID !== undefined) h.set("Nats-Msg-Id", options.msgID)
      }
      const token = (next++).toString(36)
      waiting.set(token, { subject, deadline: performance.now() + timeoutMs, done })
      outgoing.add({ token, subject, data, headers: h })
    }
  })

const ACK = Uint8Array.of(43, 65, 67, 75) // +ACK
const NAK = Uint8Array.of(45, 78, 65, 75) // -NAK
const TERM = Uint8Array.of(43, 84, 69, 82, 77) // +TERM
const IN_PROGRESS = Uint8Array.of(43, 87, 80, 73) // +WPI
/** How often a message whose nak waits out its delay is marked in progress: well inside every actor's ack wait. */
const IN_PROGRESS_EVERY_MS = 5000
const encoder = new TextEncoder()
/**
 * How long after its expiry a pull JetStream did not answer is given up. nats-server before 2.9.15 drops a pull
 * that expires while it is handing it a message without sending its 408 (nats-server#3942): the messages published
 * meanwhile wait for the next pull, so the wait is kept short. Two such pulls in a row mean something else (a lost
 * connection, a consumer deleted between pulls), and fail.
 */
const PULL_GRACE_MS = 100

/**
 * A pulled message, read from its reply subject:
 * `$JS.ACK.[<domain>.<account>.]<stream>.<consumer>.<delivered>.<seq>.<consumer seq>.<time>.<pending>[.<random>]`.
 */
class Pulled implements PulledMessage {
  readonly seq: number
  readonly info: PulledMessage["info"]
  constructor(private readonly msg: Msg) {
    const tokens = msg.reply!.split(".")
    const at = tokens.length === 9 ? 4 : 6
    this.info = { deliveryCount: Number(tokens[at]), pending: Number(tokens[at + 4]) }
    this.seq = Number(tokens[at + 1])
  }
  get subject() {
    return this.msg.subject
  }
  get data() {
    return this.msg.data
  }
  get headers() {
    return this.msg.headers
  }
  ack() {
    this.msg.respond(ACK)
  }
  /**
   * The delay is waited out here, not by the server: nats-server 2.9.10 left one in four to one in ten messages nak'd
   * with a delay undelivered for minutes, through new pulls and past its ack wait (measured on this machine with a
   * bare client, a new consumer's first message, `max_ack_pending` 1 or 100; a plain nak was handed out again at once
   * every time). Meanwhile the message
   * is kept in progress, so its ack wait does not hand it to another process early; a process that stops meanwhile
   * leaves it to the ack wait.
   */
  nak(millis?: number) {
    const until = performance.now() + (millis ?? 0)
    const step = () => {
      const left = until - performance.now()
      try {
        this.msg.respond(left <= 0 ? NAK : IN_PROGRESS)
      } catch {
        return // The connection is closed: the server hands the message out again after its ack wait.
      }
      if (left > 0) setTimeout(step, Math.min(left, IN_PROGRESS_EVERY_MS)).unref()
    }
    step()
  }
  term() {
    this.msg.respond(TERM)
  }
}

/**
 * Pull requests as the server sees them: a request to `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` whose reply
 * subject is a token of this puller's inbox. Messages arrive on their own subjects with a `$JS.ACK` reply; the
 * server's status answers (408 expired; 409 consumer deleted ...) arrive on the token. No idle heartbeats: nats.js
 * gives a pull up when two of them are read late (a busy event loop), and unsubscribes its inbox, while the server
 * may still deliver to it; such a message waited out its ack wait. Here the subscription outlives every pull.
 */
const puller = (connection: NatsConnection, stream: string, consumer: string) =>
  Effect.gen(function* () {
    interface Current {
      readonly token: string
      readonly batch: number
      received: number
      readonly onMessage: (msg: PulledMessage) => void
      readonly timer: ReturnType<typeof setTimeout>
      readonly end: (problem: string | undefined) => void
    }
    const inbox = createInbox()
    const api = `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`
    let current: Current | undefined
    let next = 0
    /** The last pull was not answered: a second in a row is a failure. */
    let unanswered = false
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        connection.subscribe(`${inbox}.*`, {
          callback: (error, msg) => {
            if (error !== null) return
            const pull = current
            if (msg.reply?.startsWith("$JS.ACK.") === true) {
              if (pull === undefined || pull.received >= pull.batch) return void msg.respond(NAK)
              pull.received++
              pull.onMessage(new Pulled(msg))
              if (pull.received === pull.batch) pull.end(undefined)
              return
            }
            if (pull === undefined || msg.subject !== pull.token) return
            const code = msg.headers?.code ?? 0
            if (code === 100) return
            pull.end(
              code === 404 || code === 408
                ? undefined
                : `JetStream ended a pull on ${stream} > ${consumer}: ${code} ${msg.headers?.description ?? ""}`,
            )
          },
        }),
      ),
      (sub) => Effect.sync(() => sub.unsubscribe()),
    )
    const pull: Puller["pull"] = (batch, expiresMs, onMessage) =>
      Effect.callback<number, PullFailed>((resume) => {
        const token = `${inbox}.${(next++).toString(36)}`
        const end = (problem: string | undefined, answered = true) => {
          if (current?.token !== token) return
          const received = current.received
          clearTimeout(current.timer)
          current = undefined
          if (!answered && !unanswered) {
            unanswered = true
            return resume(Effect.succeed(received))
          }
          unanswered = false
          resume(
            problem === undefined
              ? Effect.succeed(received)
              : Effect.fail(new PullFailed({ message: problem, received })),
          )
        }
        current = {
          token,
          batch,
          received: 0,
          onMessage,
          end,
          timer: setTimeout(
            () => end(`JetStream answered none of two pulls in a row on ${stream} > ${consumer}`, false),
            expiresMs + PULL_GRACE_MS,
          ),
        }
        try {
          connection.publish(api, encoder.encode(`{"batch":${batch},"expires":${expiresMs * 1_000_000}}`), {
            reply: token,
          })
        } catch (error) {
          end(`a pull on ${stream} > ${consumer} could not be sent: ${String(error)}`)
        }
        // Interrupted (a drain that timed out): the pull is left to expire; what it still brings is handed back.
        return Effect.sync(() => end(undefined))
      })
    return { pull } satisfies Puller
  })

/** Logs connection loss and recovery for as long as the layer lives. */
const watchStatus = (connection: NatsConnection) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<never>()
    const log = (status: Status) => {
      const message =
        status.type === "disconnect"
          ? Effect.logWarning("nats connection lost").pipe(Effect.annotateLogs({ server: status.server }))
          : status.type === "reconnect"
            ? Effect.logInfo("nats connection recovered").pipe(Effect.annotateLogs({ server: status.server }))
            : status.type === "error"
              ? Effect.logError("nats error").pipe(Effect.annotateLogs({ error: String(status.error) }))
              : undefined
      if (message) Effect.runForkWith(context)(message)
    }
    yield* Effect.forkScoped(
      Effect.promise(async () => {
        for await (const status of connection.status()) log(status)
      }),
    )
  })

import { Context, Effect, Layer, Schedule, Schema, type Scope } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { Nats } from "../platform/Nats.ts"
import { LiveBulkRetry, LiveDelivery, LiveEndpoint } from "./LiveStatus.ts"

/**
 * What the live views share: one subscription per process to what changes in the webhooks context (delivery
 * status messages over NATS, endpoint and bulk-retry changes over NOTIFY), and the Server-Sent Events streams they
 * fan out to, each with a bounded buffer, keep-alives, and an end when its session no longer is. The console's
 * `LiveFeed` and the portal's `PortalLive` each pick from the changes what their connections may see.
 */

/** The NOTIFY channel of endpoint and bulk-retry changes (migrations 0062, 0102). */
export const LIVE_CHANNEL = "console_live"

/**
 * What one connection may have waiting for its browser: past it the browser has fallen behind, and its
 * connection is dropped (it reconnects and catches up from the database) rather than held in memory.
 */
export const LIVE_BUFFER_BYTES = 256 * 1024

/** How often each connection gets a keep-alive comment and its session is checked. */
const HEARTBEAT = "15 seconds"

/** A bulk retry's change, with what a recovery's view shows of it (null for the console's own bulk retries). */
export const LiveBulkRetryChange = Schema.Struct({
  ...LiveBulkRetry.fields,
  endpoint_id: Schema.optional(Schema.NullOr(Schema.Number)),
  since: Schema.optional(Schema.NullOr(Schema.String)),
  created_at: Schema.optional(Schema.NullOr(Schema.String)),
  finished_at: Schema.optional(Schema.NullOr(Schema.String)),
})
export type LiveBulkRetryChange = typeof LiveBulkRetryChange.Type

/** One change heard: what it is about, and its data as the message or the notification carried it. */
export type LiveChange =
  | { readonly kind: "delivery"; readonly data: LiveDelivery }
  | { readonly kind: "endpoint"; readonly data: LiveEndpoint }
  | { readonly kind: "bulk_retry"; readonly data: LiveBulkRetryChange }

const decodeDelivery = Schema.decodeUnknownOption(Schema.fromJsonString(LiveDelivery))
const Notification = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("endpoint"), ...LiveEndpoint.fields }),
  Schema.Struct({ kind: Schema.Literal("bulk_retry"), ...LiveBulkRetryChange.fields }),
])
const decodeNotification = Schema.decodeUnknownOption(Schema.fromJsonString(Notification))
const decoder = new TextDecoder()
const encoder = new TextEncoder()

/** One Server-Sent Events frame. */
export const liveFrame = (name: string, data: unknown) =>
  encoder.encode(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
const KEEP_ALIVE = encoder.encode(": keep-alive\n\n")
/** The first frame: the browser's reconnection delay (the page schedules its own), then `ready`. */
const READY = encoder.encode(`retry: 2000\nevent: ready\ndata: {}\n\n`)
/** The last frame of a stream whose session ended or expired. */
export const SESSION_ENDED = liveFrame("session_ended", {})

/** The processes whose roles serve a live view subscribe; others hear nothing. */
const LIVE_ROLES = ["console", "portal"] as const

/**
 * The changes of the webhooks context as they happen, heard once per process (when it serves a live view) and
 * handed to every listener in turn. A listener must not block: it queues frames and returns.
 */
export class LiveChanges extends Context.Service<LiveChanges>()("partner-service/webhooks/LiveChanges", {
  make: Effect.gen(function* () {
    const config = yield* AppConfig
    const listeners = new Set<(change: LiveChange) => void>()
    const emit = (change: LiveChange) => {
      for (const listener of listeners) listener(change)
    }

    if (LIVE_ROLES.some((role) => config.roles.includes(role))) {
      const nats = yield* Nats
      const db = yield* Db
      yield* nats.follow(
        nats.streamName("WEBHOOKS"),
        nats.subject("webhooks.status.>"),
        undefined,
        (message) => {
          if (listeners.size === 0) return
          const status = decodeDelivery(decoder.decode(message.data))
          if (status._tag === "Some") emit({ kind: "delivery", data: status.value })
        },
      )
      yield* db.listen(LIVE_CHANNEL, (payload) => {
        if (listeners.size === 0) return
        const change = decodeNotification(payload)
        if (change._tag === "None") return
        const { kind, ...data } = change.value
        emit(
          kind === "endpoint"
            ? { kind, data: data as LiveEndpoint }
            : { kind, data: data as LiveBulkRetryChange },
        )
      })
    }

    /** Hands every change to `listener` until the scope closes. */
    const subscribe = (listener: (change: LiveChange) => void): Effect.Effect<void, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.sync(() => listeners.add(listener)),
        () => Effect.sync(() => listeners.delete(listener)),
      ).pipe(Effect.asVoid)

    return { subscribe }
  }),
}) {
  static readonly layer = Layer.effect(LiveChanges, LiveChanges.make)
}

/** One open stream: its session, what its view keeps of it (`meta`), and how frames reach it. */
export interface LiveConnection<M> {
  readonly sessionId: string
  readonly meta: M
  /** Queues a frame, or drops the connection when its buffer cannot take it. */
  readonly send: (bytes: Uint8Array) => void
  /** Ends the stream after what is queued (a session that ended, a shutdown). */
  readonly end: (last?: Uint8Array) => void
}

export interface LiveStreamsOptions<E, R> {
  /** Whether the session still is (not ended, not expired), asked at every heartbeat. */
  readonly stillLive: (sessionId: string) => Effect.Effect<boolean, E, R>
  /** Counts streams opening (+1) and closing (-1). */
  readonly counted?: (delta: number) => void
  /** Counts streams dropped because their browser fell behind. */
  readonly dropped?: () => void
}

/**
 * Server-Sent Events streams of one live view: each opens with `ready`, gets a keep-alive every heartbeat, is
 * dropped when its buffer (`LIVE_BUFFER_BYTES`) cannot take a frame, and ends with `session_ended` when its session
 * no longer is. All end when the scope closes.
 */
export const makeLiveStreams = <M, E, R>(options: LiveStreamsOptions<E, R>) =>
  Effect.gen(function* () {
    const connections = new Set<LiveConnection<M>>()

    const heartbeat = Effect.gen(function* () {
      const bySession = new Map<string, Array<LiveConnection<M>>>()
      for (const connection of connections) {
        connection.send(KEEP_ALIVE)
        bySession.set(connection.sessionId, [...(bySession.get(connection.sessionId) ?? []), connection])
      }
      for (const [id, open] of bySession) {
        if (yield* options.stillLive(id)) continue
        for (const connection of open) connection.end(SESSION_ENDED)
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.logWarning("live view session check failed").pipe(
          Effect.annotateLogs({ cause: String(cause) }),
        ),
      ),
    )
    yield* Effect.forkScoped(Effect.repeat(heartbeat, Schedule.spaced(HEARTBEAT)))
    yield* Effect.addFinalizer(() => Effect.sync(() => [...connections].forEach((c) => c.end())))

    /** A stream for the session `sessionId`, until the browser leaves or falls behind. */
    const open = (sessionId: string, meta: M): ReadableStream<Uint8Array> => {
      let connection: LiveConnection<M> | undefined
      const leave = () => {
        if (connection !== undefined && connections.delete(connection)) options.counted?.(-1)
      }
      return new ReadableStream<Uint8Array>(
        {
          start: (controller) => {
            const opened: LiveConnection<M> = {
              sessionId,
              meta,
              send: (bytes) => {
                if ((controller.desiredSize ?? 0) >= bytes.byteLength) return controller.enqueue(bytes)
                leave()
                options.dropped?.()
                controller.error(new Error("live connection fell behind"))
              },
              end: (last) => {
                leave()
                if (last !== undefined) controller.enqueue(last)
                controller.close()
              },
            }
            connection = opened
            connections.add(opened)
            options.counted?.(1)
            controller.enqueue(READY)
          },
          cancel: leave,
        },
        new ByteLengthQueuingStrategy({ highWaterMark: LIVE_BUFFER_BYTES }),
      )
    }

    /** Ends the streams of a session that was signed out. */
    const endSession = (sessionId: string) => {
      for (const connection of connections) {
        if (connection.sessionId === sessionId) connection.end(SESSION_ENDED)
      }
    }

    return { open, endSession, connections: connections as ReadonlySet<LiveConnection<M>> }
  })

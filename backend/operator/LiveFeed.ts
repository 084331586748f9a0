import { Context, Effect, Layer, Schedule, Schema } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { Nats } from "../platform/Nats.ts"
import { metrics } from "../platform/Observability.ts"
import { LiveBulkRetry, LiveDelivery, LiveEndpoint, type LiveEventName } from "./LiveEvents.ts"
import { Sessions } from "./Sessions.ts"

/** The NOTIFY channel of endpoint and bulk-retry changes (migration 0062). */
export const LIVE_CHANNEL = "console_live"

/**
 * What one connection may have waiting for its browser: past it the browser has fallen behind, and its
 * connection is dropped (it reconnects and catches up from the database) rather than held in memory.
 */
export const LIVE_BUFFER_BYTES = 256 * 1024

/** How often each connection gets a keep-alive comment and its session is checked. */
const HEARTBEAT = "15 seconds"

const encoder = new TextEncoder()
const frame = (name: LiveEventName, data: unknown) =>
  encoder.encode(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
const KEEP_ALIVE = encoder.encode(": keep-alive\n\n")
/** The first frame: the browser's reconnection delay (the console schedules its own), then `ready`. */
const READY = encoder.encode(`retry: 2000\nevent: ready\ndata: {}\n\n`)

const decodeDelivery = Schema.decodeUnknownOption(Schema.fromJsonString(LiveDelivery))
const Notification = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("endpoint"), ...LiveEndpoint.fields }),
  Schema.Struct({ kind: Schema.Literal("bulk_retry"), ...LiveBulkRetry.fields }),
])
const decodeNotification = Schema.decodeUnknownOption(Schema.fromJsonString(Notification))
const decoder = new TextDecoder()

interface Connection {
  readonly sessionId: string
  /** Queues a frame, or drops the connection when its buffer cannot take it. */
  readonly send: (bytes: Uint8Array) => void
  /** Ends the stream after what is queued (a session that ended, a shutdown). */
  readonly end: (last?: Uint8Array) => void
}

/**
 * The console's live view: one subscription per console process to the delivery status messages (NATS) and to
 * the endpoint and bulk-retry changes (NOTIFY), fanned out to every open `GET /api/live` as Server-Sent Events.
 * Each connection's queue is bounded, so a slow browser costs at most its buffer and never holds anyone up.
 */
export class LiveFeed extends Context.Service<LiveFeed>()("partner-service/operator/LiveFeed", {
  make: Effect.gen(function* () {
    const config = yield* AppConfig
    const sessions = yield* Sessions
    const connections = new Set<Connection>()

    const broadcast = (name: LiveEventName, data: unknown) => {
      if (connections.size === 0) return
      const bytes = frame(name, data)
      for (const connection of connections) connection.send(bytes)
    }

    if (config.roles.includes("console")) {
      const nats = yield* Nats
      const db = yield* Db
      yield* nats.follow(
        nats.streamName("WEBHOOKS"),
        nats.subject("webhooks.status.>"),
        undefined,
        (message) => {
          const status = decodeDelivery(decoder.decode(message.data))
          if (status._tag === "Some") broadcast("delivery", status.value)
        },
      )
      yield* db.listen(LIVE_CHANNEL, (payload) => {
        const change = decodeNotification(payload)
        if (change._tag === "None") return
        const { kind, ...data } = change.value
        broadcast(kind, data)
      })
    }

    /** Keep-alives for every connection; the streams of sessions that expired or were revoked end. */
    const heartbeat = Effect.gen(function* () {
      const bySession = new Map<string, Array<Connection>>()
      for (const connection of connections) {
        connection.send(KEEP_ALIVE)
        bySession.set(connection.sessionId, [...(bySession.get(connection.sessionId) ?? []), connection])
      }
      for (const [id, open] of bySession) {
        if (yield* sessions.stillLive(id)) continue
        for (const connection of open) connection.end(frame("session_ended", {}))
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

    /** A stream of the live view for the session `sessionId`, until the browser leaves or falls behind. */
    const open = (sessionId: string): ReadableStream<Uint8Array> => {
      let connection: Connection | undefined
      const leave = () => {
        if (connection !== undefined && connections.delete(connection)) metrics.liveConnections.dec()
      }
      return new ReadableStream<Uint8Array>(
        {
          start: (controller) => {
            const opened: Connection = {
              sessionId,
              send: (bytes) => {
                if ((controller.desiredSize ?? 0) >= bytes.byteLength) return controller.enqueue(bytes)
                leave()
                metrics.liveDropped.inc()
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
            metrics.liveConnections.inc()
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
        if (connection.sessionId === sessionId) connection.end(frame("session_ended", {}))
      }
    }

    return { open, endSession }
  }),
}) {
  static readonly layer = Layer.effect(LiveFeed, LiveFeed.make)
}

import { Duration, Effect } from "effect"
import { perTurnBatch } from "../PerTurnBatch.ts"
import { DependencyUnavailable } from "../Unavailable.ts"
import { NatsClient } from "./Client.ts"
import { acknowledgedPublisher } from "./Publisher.ts"
import { type PublishAck, PublishFailed, type PublishOptions } from "./Types.ts"

/** How long `publish` waits for JetStream's acknowledgement (nats.js's default for `js.publish`). */
const PUBLISH_TIMEOUT_MS = 5000

/**
 * A publish JetStream did not acknowledge: the server is away, a stream is electing a leader, or a stream that
 * refuses new messages is full. Each passes by itself, so the publish is for its caller to retry.
 */
const notAcknowledged = (error: Error) =>
  new DependencyUnavailable({ dependency: "nats", reason: error.message })

/** A message of `publishAll`; messages that share a `key` go out in order. */
interface Publication {
  readonly subject: string
  readonly data: Uint8Array
  readonly options?: PublishOptions
  readonly key?: string
}

/** The publishes of `Nats`: acknowledged one by one or many at once, tried by a caller that answers for them, or core. */
export const makePublishing = Effect.gen(function* () {
  const { connection } = yield* NatsClient
  const acknowledged = yield* acknowledgedPublisher(connection)

  const publish = (name: string, data: Uint8Array, options: PublishOptions = {}) =>
    Effect.callback<PublishAck>((resume) =>
      acknowledged(name, data, options, PUBLISH_TIMEOUT_MS, (error, ack) =>
        resume(error === undefined ? Effect.succeed(ack!) : Effect.die(notAcknowledged(error))),
      ),
    )

  const publishAll = (messages: ReadonlyArray<Publication>): Effect.Effect<void> =>
    messages.length === 0
      ? Effect.void
      : Effect.callback<void>((resume) => {
          let left = messages.length
          let failed = false
          // A key's messages after its first, sent from the acknowledgement of the one before.
          const following = new Map<string, Array<Publication>>()
          const send = (m: Publication) =>
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

  return { publish, publishAll, tryPublish, publishUnacknowledged }
})

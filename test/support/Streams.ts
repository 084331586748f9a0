import { Effect } from "effect"
import { Nats, type StreamBase } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"

export interface StoredMessage {
  readonly seq: number
  readonly subject: string
  readonly msgId: string | undefined
  readonly json: unknown
}

/** Every message the stream holds now, in stream order, with the deployment prefix taken off subjects. */
export const readStream = (base: StreamBase) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const client = yield* NatsClient
    const stream = nats.streamName(base)
    const info = yield* Effect.promise(() => client.jsm.streams.info(stream))
    const out: Array<StoredMessage> = []
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const msg = yield* Effect.promise(() => client.jsm.streams.getMessage(stream, { seq }))
      if (msg === null) continue
      out.push({
        seq,
        subject: nats.unprefixed(msg.subject),
        msgId: msg.header.get("Nats-Msg-Id") || undefined,
        json: msg.json(),
      })
    }
    return out
  })

/** Polls until `check` passes (or the test's own timeout ends it); no timing is asserted. */
export const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, check: (a: A) => boolean) =>
  Effect.gen(function* () {
    while (true) {
      const value = yield* effect
      if (check(value)) return value
      yield* Effect.sleep("25 millis")
    }
  })

import { Effect } from "effect"
import type { StreamBase } from "../../backend/contract/Streams.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"

export interface StoredMessage {
  readonly seq: number
  readonly subject: string
  readonly msgId: string | undefined
  readonly json: unknown
}

/** One message as the stream stores it: the exact bytes and every header, the deployment prefix off its subject. */
export interface RawMessage {
  readonly seq: number
  readonly subject: string
  readonly headers: Record<string, string>
  readonly data: Buffer
}

/** Every message the stream holds now, in stream order, as stored. */
export const readRawStream = (base: StreamBase) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const client = yield* NatsClient
    const stream = nats.streamName(base)
    const info = yield* Effect.promise(() => client.jsm.streams.info(stream))
    const out: Array<RawMessage> = []
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      // A message removed since `info` (limits, a purge) is skipped.
      const msg = yield* Effect.promise(() =>
        client.jsm.streams.getMessage(stream, { seq }).catch(() => null),
      )
      if (msg === null) continue
      const headers: Record<string, string> = {}
      for (const key of msg.header?.keys() ?? []) headers[key] = msg.header.get(key)
      out.push({ seq, subject: nats.unprefixed(msg.subject), headers, data: Buffer.from(msg.data) })
    }
    return out
  })

/** When the stream stored its message `seq` (to the millisecond). */
export const storedAt = (base: StreamBase, seq: number) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const client = yield* NatsClient
    const msg = yield* Effect.promise(() => client.jsm.streams.getMessage(nats.streamName(base), { seq }))
    return msg!.time
  })

/** Every message the stream holds now, in stream order, its body parsed as JSON. */
export const readStream = (base: StreamBase) =>
  Effect.map(readRawStream(base), (messages) =>
    messages.map((m): StoredMessage => ({
      seq: m.seq,
      subject: m.subject,
      msgId: m.headers["Nats-Msg-Id"] || undefined,
      json: JSON.parse(m.data.toString("utf8")) as unknown,
    })),
  )

/** Polls until `check` passes (or the test's own timeout ends it); no timing is asserted. */
export const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, check: (a: A) => boolean) =>
  Effect.gen(function* () {
    while (true) {
      const value = yield* effect
      if (check(value)) return value
      yield* Effect.sleep("25 millis")
    }
  })

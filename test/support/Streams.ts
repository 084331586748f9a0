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

interface Wait {
  /** The line of the test that waits. */
  readonly at: string
  last?: unknown
}

/** The running test's waits that have not passed: a test that times out reports them (`Waits.setup.ts`). */
const unpassed = new Set<Wait>()

/** What each wait of the running test that has not passed last saw, and where it waits; then forgets them. */
export const unpassedWaits = () => {
  const out = [...unpassed].map(({ at, last }) => {
    let seen: string
    try {
      seen = JSON.stringify(last, (_key, value: unknown) =>
        typeof value === "bigint" ? value.toString() : value,
      )
    } catch {
      seen = String(last)
    }
    return `${at}: last saw ${seen === undefined ? "nothing yet" : seen.slice(0, 2000)}`
  })
  unpassed.clear()
  return out
}

/**
 * Polls until `check` passes (or the test's own timeout ends it); no timing is asserted. A test that times out
 * says where it still waited and what it saw last.
 */
export const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, check: (a: A) => boolean) => {
  const frames = (new Error().stack ?? "").split("\n").filter((line) => /\(?\S+:\d+:\d+\)?$/.test(line))
  const caller = frames.find((line) => /\.(test|fault)\.ts:/.test(line)) ?? frames[1] ?? ""
  const wait: Wait = { at: caller.replace(/^.*?((test|backend)\/[^\s]*:\d+):\d+\)?$/, "$1") }
  return Effect.gen(function* () {
    unpassed.add(wait)
    while (true) {
      const value = yield* effect
      wait.last = value
      if (check(value)) {
        unpassed.delete(wait)
        return value
      }
      yield* Effect.sleep("25 millis")
    }
  })
}

/**
 * A server-sent event stream read with fetch until the scope closes: the response, the text so far and whether it
 * ended, and `until` (the text passing `check`). Returns once the stream said `ready`.
 */
export const openEventStream = (url: string, headers: Record<string, string>) =>
  Effect.gen(function* () {
    const controller = new AbortController()
    yield* Effect.addFinalizer(() => Effect.sync(() => controller.abort()))
    const response = yield* Effect.promise(() => fetch(url, { headers, signal: controller.signal }))
    const state = { text: "", ended: false }
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) break
          state.text += value
        }
      } catch {
        // Aborted by the scope's end.
      }
      state.ended = true
    })()
    const until = (check: (text: string) => boolean) =>
      eventually(
        Effect.sync(() => state.text),
        check,
      )
    yield* until((text) => text.includes("event: ready"))
    return { response, state, until }
  })

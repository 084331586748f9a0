import { Clock, Effect } from "effect"
import type { Input } from "./CommandLine.ts"
import { CliIo } from "./Io.ts"
import { isCalendarDate, readInstant } from "../platform/Dates.ts"
import { CliUsage } from "./Usage.ts"
import { type StreamBase, Streams } from "../contract/Streams.ts"
import { type FollowedMessage, Nats, subjectsOverlap } from "../platform/Nats.ts"

const UNITS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** `--since`: a duration back from now (`90s`, `10m`, `2h`, `1d`), an ISO-8601 day (UTC) or time. */
export const parseSince = (value: string, now: number): Date | undefined => {
  const relative = /^(\d+)([smhd])$/.exec(value)
  if (relative) return new Date(now - Number(relative[1]) * UNITS[relative[2] as keyof typeof UNITS])
  if (isCalendarDate(value)) return new Date(`${value}T00:00:00Z`)
  const read = readInstant(value)
  return "at" in read ? read.at : undefined
}

const decoder = new TextDecoder()

const body = (data: Uint8Array) => {
  const text = decoder.decode(data)
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

/** One message as on-call reads it: sequence, subject, stream time, headers, then the body (pretty JSON). */
export const formatMessage = (stream: string, subject: string, msg: FollowedMessage) => {
  const headers = [...(msg.headers?.keys() ?? [])].map((key) => `  ${key}: ${msg.headers?.get(key)}`)
  return [
    `#${msg.seq} ${subject} ${new Date(msg.info.timestampNanos / 1e6).toISOString()} [${stream}]`,
    ...headers,
    body(msg.data),
    "",
  ].join("\n")
}

/**
 * Prints every message matching `pattern` (a subject pattern of `docs/architecture.md`, without the deployment prefix) from
 * every stream that can hold one, or from `--stream`, and follows new ones until interrupted.
 */
export const tail = Effect.fn("cli.tail")(function* (input: Input<"tail">) {
  const [pattern] = input.args
  const { options } = input
  const io = yield* CliIo
  const nats = yield* Nats
  const subject = nats.subject(pattern)
  const since =
    options.since === undefined ? undefined : parseSince(options.since, yield* Clock.currentTimeMillis)
  if (options.since !== undefined && since === undefined) {
    return yield* new CliUsage({
      message: `--since takes a duration such as 10m, 2h or 1d, or an ISO time; got ${options.since}`,
    })
  }
  const known = (Object.keys(Streams) as Array<StreamBase>).map((base) => ({
    name: nats.streamName(base),
    subjects: nats.subject(nats.streamSubjects(base)),
  }))
  const chosen = options.stream
    ? known.filter(
        (s) => s.name === options.stream || s.name === nats.streamName(options.stream as StreamBase),
      )
    : known
  // JetStream refuses a consumer whose filter the stream cannot hold, so a mismatched --stream is a usage error.
  const streams = chosen.filter((s) => subjectsOverlap(s.subjects, subject))
  if (streams.length === 0) {
    return yield* new CliUsage({
      message: `no stream${options.stream ? ` named ${options.stream}` : ""} holds subjects matching ${pattern}; streams: ${known.map((s) => `${s.name} (${nats.unprefixed(s.subjects)})`).join(", ")}`,
    })
  }
  for (const stream of streams) {
    if (!(yield* nats.streamExists(stream.name))) {
      return yield* new CliUsage({
        message: `stream ${stream.name} does not exist yet: start the service or run \`npm run cli -- migrate\` first`,
      })
    }
  }
  for (const stream of streams) {
    yield* nats.follow(stream.name, subject, since, (msg) =>
      io.stdout(`${formatMessage(stream.name, nats.unprefixed(msg.subject), msg)}\n`),
    )
  }
  io.stderr(
    `tailing ${pattern} on ${streams.map((s) => s.name).join(", ")}${since ? ` since ${since.toISOString()}` : ""}; ctrl-C to stop\n`,
  )
  return yield* Effect.never
})

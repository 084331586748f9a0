/**
 * JetStream's wire protocol as the server speaks it, for the publishes and pulls `Publisher.ts` and `Puller.ts`
 * make on a core connection: the JSON the server answers a publish with, the pull request, the acknowledgement
 * payloads and the reply subject of a pulled message. Callers never see these; they get the shapes of `Types.ts`.
 */

/** The server's answer to a JetStream publish (JSON on the publish's reply subject). */
export interface PubAckResponse {
  readonly stream?: string
  readonly seq?: number
  readonly duplicate?: boolean
  readonly domain?: string
  readonly error?: { readonly code?: number; readonly description?: string }
}

/** The subject a pull request for `consumer` of `stream` is published to. */
export const pullSubject = (stream: string, consumer: string) =>
  `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`

/**
 * The body of a pull request: up to `batch` messages, the request expiring after `expiresMs`; with `expiresMs` 0,
 * only those waiting now (`no_wait`: the server ends the pull as soon as it has sent them).
 */
export const pullRequest = (batch: number, expiresMs: number) =>
  expiresMs === 0
    ? `{"batch":${batch},"no_wait":true}`
    : `{"batch":${batch},"expires":${expiresMs * 1_000_000}}`

/** Status codes the server answers on a request's reply subject (in the `Status` header line). */
export const Status = {
  /** An idle heartbeat or flow control message. */
  Control: 100,
  /** A pull request found no messages (no-wait pulls only). */
  NoMessages: 404,
  /** A pull request expired. */
  RequestTimeout: 408,
  /** A publish reached no stream. */
  NoResponders: 503,
} as const

/**
 * A pulled message's reply subject, its acknowledgement subject:
 * `$JS.ACK.[<domain>.<account>.]<stream>.<consumer>.<delivered>.<seq>.<consumer seq>.<time>.<pending>[.<random>]`.
 */
export const ACK_REPLY_PREFIX = "$JS.ACK."

/**
 * Where `<delivered>` is among the reply subject's `.`-separated tokens (`tokenCount` of them); `<seq>` follows it,
 * `<time>` (when the stream stored the message, in nanoseconds since the epoch) is three tokens after it and
 * `<pending>` four.
 */
export const deliveredToken = (tokenCount: number) => (tokenCount === 9 ? 4 : 6)

/** Acknowledgement payloads, sent on a pulled message's reply subject. */
export const ACK = Uint8Array.of(43, 65, 67, 75) // +ACK
export const NAK = Uint8Array.of(45, 78, 65, 75) // -NAK
export const TERM = Uint8Array.of(43, 84, 69, 82, 77) // +TERM
export const IN_PROGRESS = Uint8Array.of(43, 87, 80, 73) // +WPI

import {
  type ConsumerInfo,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  type MsgRequest,
} from "@nats-io/jetstream"
import type { ConsumerReport, StreamReport } from "./Types.ts"

export const isNotFound = (error: unknown) =>
  error instanceof JetStreamApiError &&
  (error.code === JetStreamApiCodes.StreamNotFound || error.code === JetStreamApiCodes.ConsumerNotFound)

// The server sends `last_active` as an RFC 3339 time (nats.js types it as nanoseconds), absent when never.
const timeOf = (at: unknown) => (typeof at === "string" && !at.startsWith("0001-") ? new Date(at) : undefined)
const consumerReport = async (
  jsm: JetStreamManager,
  stream: string,
  info: ConsumerInfo,
): Promise<ConsumerReport> => {
  const behind = info.num_pending + info.num_ack_pending > 0
  // The first message past the ack floor that the consumer's filter takes: the oldest it has not acknowledged.
  const oldest = behind
    ? await jsm.streams
        .getMessage(stream, {
          seq: info.ack_floor.stream_seq + 1,
          next_by_subj: info.config.filter_subject || ">",
        } as unknown as MsgRequest)
        .catch(() => null)
    : null
  const lastActive = [info.delivered.last_active, info.ack_floor.last_active]
    .map((at) => timeOf(at))
    .filter((at) => at !== undefined)
    .sort((a, b) => b.getTime() - a.getTime())[0]
  return {
    name: info.name,
    pending: info.num_pending,
    ackPending: info.num_ack_pending,
    redelivered: info.num_redelivered,
    oldestUnacknowledgedAt: oldest === null ? undefined : oldest.time,
    lastActiveAt: lastActive,
  }
}
/** One stream as `/system` and the gauges show it, with its durable consumers; undefined when it does not exist. */
export const streamReport = async (
  jsm: JetStreamManager,
  name: string,
): Promise<StreamReport | undefined> => {
  const info = await jsm.streams
    .info(name)
    .catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error)))
  if (info === undefined) return undefined
  const consumers: Array<ConsumerReport> = []
  for await (const consumer of jsm.consumers.list(name)) {
    if (consumer.config.durable_name === undefined) continue
    consumers.push(await consumerReport(jsm, name, consumer))
  }
  consumers.sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }))
  return {
    name,
    subjects: info.config.subjects ?? [],
    messages: info.state.messages,
    bytes: info.state.bytes,
    firstSeq: info.state.first_seq,
    lastSeq: info.state.last_seq,
    limits: {
      maxMessages: info.config.max_msgs,
      maxBytes: info.config.max_bytes,
      maxAgeSeconds: info.config.max_age / 1_000_000_000,
      discard: info.config.discard === DiscardPolicy.Old ? "old" : "new",
    },
    consumers,
  }
}

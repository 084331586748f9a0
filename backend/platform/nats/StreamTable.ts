import { Context, Layer } from "effect"
import { withByteLimits } from "../Settings.ts"

/** A stream the deployment provisions: the first token of every subject it holds, and what it does when full. */
export interface StreamSpec {
  readonly subjects: string
  /** At its byte limit, `new` refuses a new message and `old` drops the oldest ones. */
  readonly discard: "new" | "old"
  /** Its byte limit unless `NATS_MAX_BYTES_<BASE>` sets another (its age limit is a week). */
  readonly maxBytes: number
}

/**
 * The streams a deployment provisions, by base name (the deployment prefix goes in front of it). `Nats.layerOn`
 * takes them from the composition root.
 */
export type Streams = Readonly<Record<string, StreamSpec>>

/** The streams provisioned, each with the byte limit in force. */
export class StreamTable extends Context.Service<StreamTable, Streams>()(
  "partner-service/platform/StreamTable",
) {
  /** `streams` with their byte limits read from the settings. */
  static readonly layerOn = (streams: Streams) => Layer.effect(StreamTable, withByteLimits(streams))
}
export type StreamBase = string

import { Context } from "effect"

/** A stream the deployment provisions: the first token of every subject it holds, and what it does when full. */
export interface StreamSpec {
  readonly subjects: string
  /** At its byte limit, `new` refuses a new message and `old` drops the oldest ones. */
  readonly discard: "new" | "old"
}

/**
 * The streams a deployment provisions, by base name (the deployment prefix goes in front of it). `Nats.layerOn`
 * takes them from the composition root.
 */
export type Streams = Readonly<Record<string, StreamSpec>>
export class StreamTable extends Context.Service<StreamTable, Streams>()(
  "partner-service/platform/StreamTable",
) {}
export type StreamBase = string

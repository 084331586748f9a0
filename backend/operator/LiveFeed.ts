import { Context, Effect, Layer } from "effect"
import { metrics } from "../platform/Observability.ts"
import {
  LIVE_BUFFER_BYTES,
  type LiveChange,
  LiveChanges,
  liveFrame,
  makeLiveStreams,
} from "../webhooks/Live.ts"
import type { LiveBulkRetry, LiveEventName } from "./LiveEvents.ts"
import { Sessions } from "./Sessions.ts"

export { LIVE_BUFFER_BYTES }

/** What the console shows of a change: every delivery, every endpoint, every bulk retry's progress. */
const consoleEvent = (change: LiveChange): readonly [LiveEventName, unknown] => {
  switch (change.kind) {
    case "delivery":
    case "endpoint":
      return [change.kind, change.data]
    case "bulk_retry": {
      const { id, status, total, done } = change.data
      return ["bulk_retry", { id, status, total, done } satisfies LiveBulkRetry]
    }
  }
}

/**
 * The console's live view: the webhooks context's changes (`webhooks/Live.ts`, one subscription per process)
 * fanned out to every open `GET /api/live` as Server-Sent Events, each connection's queue bounded, so a slow
 * browser costs at most its buffer and never holds anyone up.
 */
export class LiveFeed extends Context.Service<LiveFeed>()("partner-service/operator/LiveFeed", {
  make: Effect.gen(function* () {
    const sessions = yield* Sessions
    const streams = yield* makeLiveStreams<undefined, unknown, never>({
      stillLive: (id) => sessions.stillLive(id),
      counted: (delta) => (delta > 0 ? metrics.liveConnections.inc() : metrics.liveConnections.dec()),
      dropped: () => metrics.liveDropped.inc(),
    })
    yield* (yield* LiveChanges).subscribe((change) => {
      if (streams.connections.size === 0) return
      const [name, data] = consoleEvent(change)
      const bytes = liveFrame(name, data)
      for (const connection of streams.connections) connection.send(bytes)
    })

    /** A stream of the live view for the session `sessionId`, until the browser leaves or falls behind. */
    const open = (sessionId: string) => streams.open(sessionId, undefined)

    return { open, endSession: streams.endSession }
  }),
}) {
  static readonly layer = Layer.effect(LiveFeed, LiveFeed.make)
}

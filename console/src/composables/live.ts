import { Schema } from "effect"
import { LiveBulkRetry, LiveDelivery, LiveEndpoint, SessionBody } from "../schemas"
import { api } from "./api"
import type { LiveState } from "./liveState"
import { type LiveFollower as Follower, liveStream } from "./liveStream"

/**
 * The console's live view (`GET /api/live`). A session that ended sends the operator to sign in (the API's 401
 * does), and the stream stays closed until a page follows it again.
 */

interface LiveEvents {
  readonly delivery: LiveDelivery
  readonly endpoint: LiveEndpoint
  readonly bulk_retry: LiveBulkRetry
}

export type LiveFollower = Follower<LiveEvents>
export type { LiveState }

const readSession = () => api(SessionBody, "GET", "/api/session")

const stream = liveStream<LiveEvents>({
  url: "/api/live",
  decoders: {
    delivery: Schema.decodeUnknownOption(Schema.fromJsonString(LiveDelivery)),
    endpoint: Schema.decodeUnknownOption(Schema.fromJsonString(LiveEndpoint)),
    bulk_retry: Schema.decodeUnknownOption(Schema.fromJsonString(LiveBulkRetry)),
  },
  sessionHolds: () =>
    readSession().then(
      () => true,
      (cause: { status?: number }) => cause.status !== 401,
    ),
  sessionEnded: () => void readSession().catch(() => undefined),
  endsForGood: false,
  catchUpOnFirstReady: false,
})

/** Follows the live view while the calling component is mounted. */
export const useLive = stream.follow

/** The live view's state, for the header's indicator. */
export const liveState = stream.state

import { Schema } from "effect"
import { PortalLiveDelivery, PortalLiveEndpoint, Recovery } from "../../../backend/portal/Api.ts"
import { ApiError } from "../composables/api"
import { liveStream } from "../composables/liveStream"
import { getSession } from "./api"
import { endSession } from "./session"

/**
 * The portal's live view (`GET /portal/api/live`). Every `ready` catches up, the first one too. A session that
 * ended (`session_ended`, or a 401 before a reconnection) ends the app's session and closes the stream for good:
 * the partner opens the portal again from their app.
 */
const stream = liveStream<{
  readonly delivery: PortalLiveDelivery
  readonly endpoint: typeof PortalLiveEndpoint.Type
  readonly recovery: Recovery
}>({
  url: "/portal/api/live",
  decoders: {
    delivery: Schema.decodeUnknownOption(Schema.fromJsonString(PortalLiveDelivery)),
    endpoint: Schema.decodeUnknownOption(Schema.fromJsonString(PortalLiveEndpoint)),
    recovery: Schema.decodeUnknownOption(Schema.fromJsonString(Recovery)),
  },
  sessionHolds: () =>
    getSession().then(
      () => true,
      (cause: unknown) => !(cause instanceof ApiError && cause.status === 401),
    ),
  sessionEnded: endSession,
  endsForGood: true,
  catchUpOnFirstReady: true,
})

/** Follows the live view while the calling component is mounted. */
export const usePortalLive = stream.follow

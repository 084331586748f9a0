import { LiveBulkRetry, LiveDelivery, LiveEndpoint } from "../webhooks/LiveStatus.ts"

/*
 * The events of `GET /api/live` (Server-Sent Events), as schemas: the backend encodes each event's data with them
 * and the console decodes it with the same declarations. Schema-only: the shapes are the webhooks context's
 * (`webhooks/LiveStatus.ts`, which imports nothing but `effect`), shared with the portal's live view. An event
 * says what changed; the page keeps its rows from the API and refetches whatever an event does not carry.
 *
 * `delivery`: a delivery was created (`pending`) or changed status (a `webhooks.status.*` message).
 * `endpoint`: an endpoint was created or changed (status, destination, events, deletion).
 * `bulk_retry`: a bulk retry was previewed, started, moved on, or finished.
 */
export { LiveBulkRetry, LiveDelivery, LiveEndpoint }

/**
 * The event names. `ready` comes first on every connection, once the stream is subscribed: a page that refetches
 * its rows after it misses nothing. `session_ended` comes last when the session expired or was revoked.
 */
export const LiveEventNames = ["ready", "delivery", "endpoint", "bulk_retry", "session_ended"] as const
export type LiveEventName = (typeof LiveEventNames)[number]

/** A live view's connection: `connecting` at first, `disconnected` while away, `catching-up` once back, `live` when caught up. */
export type LiveState = "connecting" | "disconnected" | "catching-up" | "live"

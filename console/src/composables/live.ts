import { Schema } from "effect"
import { onBeforeUnmount, readonly, ref } from "vue"
import { LiveBulkRetry, LiveDelivery, LiveEndpoint, SessionBody } from "../schemas"
import { api } from "./api"
import type { LiveState } from "./liveState"

/**
 * The live view (`GET /api/live`): one EventSource for the whole console, shared by whatever the open page
 * follows. A dropped connection is retried with a growing delay; on every (re)connection each follower catches up
 * from the API (the database is the record; events are not replayed), and the page says so.
 */

export interface LiveFollower {
  readonly delivery?: (event: LiveDelivery) => void
  readonly endpoint?: (event: LiveEndpoint) => void
  readonly bulk_retry?: (event: LiveBulkRetry) => void
  /** Refetches what the page shows: after a (re)connection, events the page missed are in the answer. */
  readonly catchUp?: () => Promise<unknown>
}

export type { LiveState }

const state = ref<LiveState>("connecting")
const followers = new Set<LiveFollower>()
let source: EventSource | undefined
let retryTimer: ReturnType<typeof setTimeout> | undefined
let failures = 0

const FIRST_DELAY_MS = 500
const MAX_DELAY_MS = 15_000
/** 0.5 s, 1 s, 2 s… up to 15 s, each with up to a fifth more at random, so tabs do not all come back at once. */
const delayAfter = (failures: number) => {
  const base = Math.min(FIRST_DELAY_MS * 2 ** Math.max(failures - 1, 0), MAX_DELAY_MS)
  return base + Math.random() * base * 0.2
}

const decoders = {
  delivery: Schema.decodeUnknownOption(Schema.fromJsonString(LiveDelivery)),
  endpoint: Schema.decodeUnknownOption(Schema.fromJsonString(LiveEndpoint)),
  bulk_retry: Schema.decodeUnknownOption(Schema.fromJsonString(LiveBulkRetry)),
} as const

const catchUp = async () => {
  state.value = "catching-up"
  await Promise.allSettled([...followers].map((follower) => follower.catchUp?.()))
  if (source !== undefined && state.value === "catching-up") state.value = "live"
}

const close = () => {
  source?.close()
  source = undefined
  if (retryTimer !== undefined) clearTimeout(retryTimer)
  retryTimer = undefined
}

const scheduleReconnect = () => {
  close()
  state.value = "disconnected"
  failures += 1
  retryTimer = setTimeout(async () => {
    retryTimer = undefined
    if (followers.size === 0) return
    // A session that ended sends the operator to sign in (the API's 401 does), and the stream stays closed.
    try {
      await api(SessionBody, "GET", "/api/session")
    } catch (cause) {
      if ((cause as { status?: number }).status === 401) return
    }
    connect()
  }, delayAfter(failures))
}

function connect() {
  close()
  const opened = new EventSource("/api/live")
  source = opened
  opened.addEventListener("ready", () => {
    // A reconnection catches up on what it missed. A connection opened with a page (its first follower) does not
    // read the page again: the page's own first load is under way beside it, and a second read of the same data
    // would double the first load's largest request.
    const missed = failures > 0
    failures = 0
    if (missed) void catchUp()
    else state.value = "live"
  })
  for (const name of ["delivery", "endpoint", "bulk_retry"] as const) {
    opened.addEventListener(name, (message) => {
      const decoded = decoders[name]((message as MessageEvent<string>).data)
      if (decoded._tag === "None") return
      for (const follower of followers)
        (follower[name] as ((e: unknown) => void) | undefined)?.(decoded.value)
    })
  }
  opened.addEventListener("session_ended", () => {
    close()
    state.value = "disconnected"
    void api(SessionBody, "GET", "/api/session").catch(() => undefined)
  })
  // The browser would retry by itself at a fixed pace; the console takes over to back off.
  opened.addEventListener("error", () => source === opened && scheduleReconnect())
}

/** Follows the live view while the calling component is mounted. */
export function useLive(follower: LiveFollower) {
  followers.add(follower)
  if (source === undefined && retryTimer === undefined) {
    state.value = "connecting"
    connect()
  }
  onBeforeUnmount(() => {
    followers.delete(follower)
    if (followers.size === 0) {
      close()
      state.value = "connecting"
    }
  })
  return { state: readonly(state) }
}

/** The live view's state, for the header's indicator. */
export const liveState = readonly(state)

import { Schema } from "effect"
import { onBeforeUnmount, readonly, ref } from "vue"
import {
  type PortalLiveDelivery,
  PortalLiveDelivery as LiveDeliverySchema,
  PortalLiveEndpoint,
  Recovery,
} from "../../../backend/portal/Api.ts"
import { ApiError } from "../composables/api"
import type { LiveState } from "../composables/liveState"
import { getSession } from "./api"
import { endSession } from "./session"

/**
 * The portal's live view (`GET /portal/api/live`): one EventSource for the app, shared by whatever the open page
 * follows. A dropped connection is opened again after a growing delay; on every `ready` each follower reads its
 * data again (events are not replayed). `session_ended` closes it for good and ends the session.
 */

export interface PortalLiveFollower {
  readonly delivery?: (event: PortalLiveDelivery) => void
  readonly endpoint?: (event: typeof PortalLiveEndpoint.Type) => void
  readonly recovery?: (event: Recovery) => void
  readonly catchUp?: () => Promise<unknown>
}

const state = ref<LiveState>("connecting")
const followers = new Set<PortalLiveFollower>()
let source: EventSource | undefined
let retryTimer: ReturnType<typeof setTimeout> | undefined
let failures = 0
let over = false

const FIRST_DELAY_MS = 500
const MAX_DELAY_MS = 15_000
const delayAfter = (failures: number) => {
  const base = Math.min(FIRST_DELAY_MS * 2 ** Math.max(failures - 1, 0), MAX_DELAY_MS)
  return base + Math.random() * base * 0.2
}

const decoders = {
  delivery: Schema.decodeUnknownOption(Schema.fromJsonString(LiveDeliverySchema)),
  endpoint: Schema.decodeUnknownOption(Schema.fromJsonString(PortalLiveEndpoint)),
  recovery: Schema.decodeUnknownOption(Schema.fromJsonString(Recovery)),
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
    if (followers.size === 0 || over) return
    // A stream refused because the session ended: the session's 401 ends the app's session, and it stays closed.
    try {
      await getSession()
    } catch (cause) {
      if (cause instanceof ApiError && cause.status === 401) {
        over = true
        return
      }
    }
    connect()
  }, delayAfter(failures))
}

function connect() {
  close()
  const opened = new EventSource("/portal/api/live")
  source = opened
  opened.addEventListener("ready", () => {
    failures = 0
    void catchUp()
  })
  for (const name of ["delivery", "endpoint", "recovery"] as const) {
    opened.addEventListener(name, (message) => {
      const decoded = decoders[name]((message as MessageEvent<string>).data)
      if (decoded._tag === "None") return
      for (const follower of followers)
        (follower[name] as ((e: unknown) => void) | undefined)?.(decoded.value)
    })
  }
  opened.addEventListener("session_ended", () => {
    over = true
    close()
    state.value = "disconnected"
    endSession()
  })
  // The browser would retry at its own fixed pace; the app backs off instead.
  opened.addEventListener("error", () => source === opened && scheduleReconnect())
}

/** Follows the live view while the calling component is mounted. */
export function usePortalLive(follower: PortalLiveFollower) {
  followers.add(follower)
  if (source === undefined && retryTimer === undefined && !over) {
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

export const portalLiveState = readonly(state)

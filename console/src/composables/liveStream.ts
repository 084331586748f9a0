import type { Option } from "effect"
import { onBeforeUnmount, readonly, ref } from "vue"
import type { LiveState } from "./liveState"

/** What a page follows of a live stream: a handler per event it cares about, and how it catches up. */
export type LiveFollower<Events> = { readonly [K in keyof Events]?: (event: Events[K]) => void } & {
  /** Refetches what the page shows: after a (re)connection, events the page missed are in the answer. */
  readonly catchUp?: () => Promise<unknown>
}

export interface LiveStreamOptions<Events> {
  /** The server-sent events' URL; `ready` opens it, `session_ended` closes it. */
  readonly url: string
  /** A decoder for each event name the stream sends; an event that does not decode is dropped. */
  readonly decoders: { readonly [K in keyof Events]: (data: string) => Option.Option<Events[K]> }
  /** Asked before a reconnection: false when the session has ended (the stream then stays closed). */
  readonly sessionHolds: () => Promise<boolean>
  /** The server ended the stream because the session ended. */
  readonly sessionEnded: () => void
  /** Whether the stream stays closed for good once the session has ended (a session that is never renewed in place). */
  readonly endsForGood: boolean
  /**
   * Whether the first `ready` also catches up, not only a reconnection's: false where the page's own first load
   * is under way beside the stream, so that it is not read twice.
   */
  readonly catchUpOnFirstReady: boolean
}

const FIRST_DELAY_MS = 500
const MAX_DELAY_MS = 15_000
/** 0.5 s, 1 s, 2 s… up to 15 s, each with up to a fifth more at random, so tabs do not all come back at once. */
const delayAfter = (failures: number) => {
  const base = Math.min(FIRST_DELAY_MS * 2 ** Math.max(failures - 1, 0), MAX_DELAY_MS)
  return base + Math.random() * base * 0.2
}

/**
 * One EventSource for an app, shared by whatever the open page follows. A dropped connection is opened again
 * after a growing delay (the browser's own retry has a fixed pace); on a reconnection each follower catches up
 * from the API (the database is the record; events are not replayed), and the state says so.
 */
export const liveStream = <Events>(options: LiveStreamOptions<Events>) => {
  const state = ref<LiveState>("connecting")
  const followers = new Set<LiveFollower<Events>>()
  let source: EventSource | undefined
  let retryTimer: ReturnType<typeof setTimeout> | undefined
  let failures = 0
  let over = false

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

  const end = () => {
    if (options.endsForGood) over = true
  }

  const scheduleReconnect = () => {
    close()
    state.value = "disconnected"
    failures += 1
    retryTimer = setTimeout(async () => {
      retryTimer = undefined
      if (followers.size === 0 || over) return
      if (await options.sessionHolds()) connect()
      else end()
    }, delayAfter(failures))
  }

  const connect = () => {
    close()
    const opened = new EventSource(options.url)
    source = opened
    opened.addEventListener("ready", () => {
      const missed = failures > 0
      failures = 0
      if (missed || options.catchUpOnFirstReady) void catchUp()
      else state.value = "live"
    })
    for (const name of Object.keys(options.decoders) as Array<keyof Events & string>) {
      opened.addEventListener(name, (message) => {
        const decoded = options.decoders[name]((message as MessageEvent<string>).data)
        if (decoded._tag === "None") return
        for (const follower of followers)
          (follower[name] as ((e: unknown) => void) | undefined)?.(decoded.value)
      })
    }
    opened.addEventListener("session_ended", () => {
      end()
      close()
      state.value = "disconnected"
      options.sessionEnded()
    })
    opened.addEventListener("error", () => source === opened && scheduleReconnect())
  }

  /** Follows the stream while the calling component is mounted. */
  const follow = (follower: LiveFollower<Events>) => {
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

  return { follow, state: readonly(state) }
}

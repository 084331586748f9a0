import { Effect } from "effect"
import type { PostResult } from "./Egress.ts"

/** An endpoint this many timeouts in a row is slowed: its cap drops to `SLOWED_CAP` until it answers again. */
export const SLOW_AFTER_TIMEOUTS = 3
export const SLOWED_CAP = 2
/** A slowed endpoint's cap, given the cap of one that answers. */
export const slowedCap = (maxInFlightPerEndpoint: number) => Math.min(SLOWED_CAP, maxInFlightPerEndpoint)
/** The longest an attempt over its endpoint's cap is deferred, in waves of the endpoint's cap. */
export const MAX_DEFER_WAVES = 60
/**
 * How far apart a slowed endpoint's waves of deferred attempts are: its deadline (or the backoff unit, if longer),
 * as each of its places is held that long. A wave due sooner would find the places still taken and be deferred
 * again, and a queue of thousands going round through Postgres, the scheduler and the attempt consumer that fast
 * would hold up every other endpoint's attempt messages.
 */
export const slowedWaveMs = (policy: { readonly backoffUnitMs: number; readonly timeoutMs: number }) =>
  Math.max(policy.backoffUnitMs, policy.timeoutMs)
/** Attempts that may wait in a process for a place of an endpoint, per place of its cap. */
const WAITING_PER_PLACE = 2

/** What the places depend on: the settings in force. */
interface PlacesPolicy {
  readonly maxInFlightPerEndpoint: number
  readonly backoffUnitMs: number
  readonly timeoutMs: number
}

/**
 * Each endpoint's places in this process's delivery actor: how many attempts it may have in flight (its cap, lower
 * while it is slowed), the attempts waiting for a place, its timeouts in a row, and when a slowed endpoint's
 * deferred attempts are due again.
 */
export const endpointPlaces = (config: PlacesPolicy) => {
  /**
   * Attempts this process has in flight per endpoint, and timeouts in a row per endpoint (as this process saw
   * them): an endpoint at its cap gets no more, so a receiver that hangs holds at most its cap of the actor's
   * attempts, and the rest go to the endpoints that answer.
   */
  const inFlight = new Map<number, number>()
  const timeoutsInRow = new Map<number, number>()
  /**
   * Per slowed endpoint, the wave its next deferred attempt is booked into, and how many that wave holds. Booked
   * across claims, a slowed endpoint's queue comes back at the pace it can take: its cap per `slowedWaveMs`.
   * Beyond `MAX_DEFER_WAVES` waves an attempt is due at a random time within them, so a queue of thousands comes
   * round evenly rather than in bursts.
   */
  const booked = new Map<number, { at: number; count: number }>()
  /**
   * Attempts waiting in this process for a place of their endpoint, each told whether it got one. An endpoint
   * that answers frees places as fast as it takes them, so a burst for it waits here rather than go round
   * through Postgres and the scheduler; at most `WAITING_PER_PLACE` times its cap wait, none while it is slowed,
   * so a receiver that hangs holds a bounded share of the actor's messages and the rest are deferred.
   */
  const waiting = new Map<number, Array<(admitted: boolean) => void>>()
  const isSlowed = (endpointId: number) => (timeoutsInRow.get(endpointId) ?? 0) >= SLOW_AFTER_TIMEOUTS
  const capOf = (endpointId: number) =>
    isSlowed(endpointId) ? slowedCap(config.maxInFlightPerEndpoint) : config.maxInFlightPerEndpoint
  /** Whether the attempt holds a place of its endpoint (false: over the cap, to be deferred). */
  const takePlace = (endpointId: number | undefined) =>
    Effect.suspend((): Effect.Effect<boolean> => {
      if (endpointId === undefined) return Effect.succeed(false)
      const cap = capOf(endpointId)
      const held = inFlight.get(endpointId) ?? 0
      if (held < cap) {
        inFlight.set(endpointId, held + 1)
        return Effect.succeed(true)
      }
      const queue = waiting.get(endpointId) ?? []
      if (isSlowed(endpointId) || queue.length >= cap * WAITING_PER_PLACE) return Effect.succeed(false)
      waiting.set(endpointId, queue)
      return Effect.callback<boolean>((resume) => {
        const told = (admitted: boolean) => resume(Effect.succeed(admitted))
        queue.push(told)
        return Effect.sync(() => {
          const at = queue.indexOf(told)
          if (at >= 0) queue.splice(at, 1)
        })
      })
    })
  /** Gives the endpoint's place to the first attempt waiting for one, if the cap allows, or back. */
  const release = (endpointId: number) => {
    const held = inFlight.get(endpointId) ?? 1
    const next = held - 1 < capOf(endpointId) ? waiting.get(endpointId)?.shift() : undefined
    if (next !== undefined) return next(true)
    if (held <= 1) inFlight.delete(endpointId)
    else inFlight.set(endpointId, held - 1)
  }
  /** An endpoint just slowed: the attempts waiting for it are deferred rather than wait on its timeouts. */
  const deferWaiting = (endpointId: number) => {
    const queue = waiting.get(endpointId) ?? []
    waiting.delete(endpointId)
    for (const told of queue) told(false)
  }
  /**
   * Counts the endpoint's timeouts in a row: the count after this outcome (0 after an answer), null when it
   * leaves the count as it was (a refusal, an error).
   */
  const noteOutcome = (endpointId: number, result: PostResult): number | null => {
    if (result._tag === "Response") {
      timeoutsInRow.delete(endpointId)
      booked.delete(endpointId)
      return 0
    }
    if (result.timedOut !== true) return null
    const streak = (timeoutsInRow.get(endpointId) ?? 0) + 1
    timeoutsInRow.set(endpointId, streak)
    if (streak === SLOW_AFTER_TIMEOUTS) deferWaiting(endpointId)
    return streak
  }

  /** When a slowed endpoint's attempt over its cap is due again (epoch ms), deferred at `now`. */
  const slowedDeferral = (endpointId: number, now: number) => {
    const waveMs = slowedWaveMs(config)
    const first = now + waveMs
    const last = now + MAX_DEFER_WAVES * waveMs
    const current = booked.get(endpointId)
    const wave =
      current === undefined || current.at < first
        ? { at: first, count: 0 }
        : current.count < capOf(endpointId)
          ? current
          : { at: current.at + waveMs, count: 0 }
    if (wave.at > last) return first + Math.random() * (last - first)
    wave.count++
    booked.set(endpointId, wave)
    return wave.at
  }

  return { isSlowed, capOf, takePlace, release, noteOutcome, slowedDeferral }
}

import { Context, Effect, Fiber, Layer, PartitionedSemaphore } from "effect"
import { AppConfig } from "./Config.ts"
import { verifySecret } from "./Crypto.ts"

/** How a kind of secret check shows in the metrics: its waiting checks, the checks begun, the hashes running. */
export interface CheckGauges {
  readonly waiting: { readonly inc: () => void; readonly dec: () => void }
  readonly begun: { readonly inc: () => void }
  readonly hashing: { readonly inc: () => void; readonly dec: () => void }
}

/**
 * The process's slots for checking a secret against its scrypt hash, shared by every gateway's `/token` and the
 * console's sign-in, so that together they never take more cores than `TOKEN_HASH_CONCURRENCY` from the requests
 * already authenticated. A freed slot goes to the lanes with someone waiting in turn: whoever floods one lane
 * queues behind itself, and a lane of its own (a client's, a clean address's) waits for the checks under way and
 * at most one more from each other busy lane.
 */
export class HashSlots extends Context.Service<HashSlots>()("partner-service/platform/HashSlots", {
  make: Effect.gen(function* () {
    const slots = PartitionedSemaphore.makeUnsafe<string>({
      permits: (yield* AppConfig).tokenHashConcurrency,
    })

    /**
     * Whether `secret` matches `hash`, once a slot is free for `lane`. A caller interrupted while waiting leaves
     * the queue at once; one interrupted while its hash runs is answered at once too, but the hash (which scrypt
     * cannot stop) keeps its slot until it ends, so an abandoned check never lets more hashes run than the slots.
     */
    const check = (lane: string, secret: string, hash: string, gauges: CheckGauges) =>
      Effect.suspend(() => {
        let queued = true
        const leave = () => {
          if (queued) {
            queued = false
            gauges.waiting.dec()
          }
        }
        gauges.waiting.inc()
        const hashing = Effect.acquireUseRelease(
          Effect.sync(() => {
            leave()
            gauges.begun.inc()
            gauges.hashing.inc()
          }),
          () => Effect.uninterruptible(verifySecret(secret, hash)),
          () => Effect.sync(() => gauges.hashing.dec()),
        ).pipe(slots.withPermit(lane), Effect.ensuring(Effect.sync(leave)))
        return Effect.flatMap(Effect.forkDetach(hashing), (fiber) =>
          Fiber.join(fiber).pipe(Effect.onInterrupt(() => Effect.forkDetach(Fiber.interrupt(fiber)))),
        )
      })

    return { check }
  }),
}) {
  static readonly layer = Layer.effect(HashSlots, HashSlots.make)
}

/**
 * How long a refusal for too many requests at once is held before it is answered: a client that sends again as
 * soon as it is answered, as a flood's connections do, then costs a timer a second rather than a request's work
 * as often as the event loop can answer, which would slow every other request of the process.
 */
export const REFUSAL_HOLD = "1 second"

/**
 * Counts the requests of each source in progress in this process and refuses one more than `limit` (after
 * `REFUSAL_HOLD`, not counted as in progress meanwhile). A request interrupted (its client gone) leaves the count
 * at once.
 */
export const makeSourceCap = (limit: number) => {
  const inProgress = new Map<string, number>()
  return <A, E, R, E2>(source: string, effect: Effect.Effect<A, E, R>, refuse: Effect.Effect<never, E2>) =>
    Effect.suspend((): Effect.Effect<A, E | E2, R> => {
      const count = inProgress.get(source) ?? 0
      if (count >= limit) return Effect.andThen(Effect.sleep(REFUSAL_HOLD), refuse)
      inProgress.set(source, count + 1)
      return effect.pipe(
        Effect.ensuring(
          Effect.sync(() => {
            const left = (inProgress.get(source) ?? 1) - 1
            if (left === 0) inProgress.delete(source)
            else inProgress.set(source, left)
          }),
        ),
      )
    })
}

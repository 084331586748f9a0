import { type Cause, Clock, Duration, Effect, Fiber, Queue, type Scope } from "effect"
import { Db } from "./Db.ts"
import { metrics } from "./Observability.ts"

export interface WakeLoopOptions<E, R> {
  /**
   * The NOTIFY channel whose notifications wake the loop. A listener that (re)connects may have missed some, so
   * it wakes the loop too.
   */
  readonly channel: string
  /** The longest wait between passes: the safety net for a wake-up that went astray. */
  readonly poll: Duration.Input
  /**
   * One pass: does the work there is. It may return when the next pass is due, if that is sooner than `poll`;
   * the loop then looks again a millisecond after it, as a timer may fire up to a millisecond early.
   */
  readonly drain: Effect.Effect<Date | undefined | void, E, R>
  /**
   * What a failed pass does before the loop waits for the next one: log it, count it, back off. The loop itself
   * goes on; the next pass comes with the next wake-up or after `poll`.
   */
  readonly onFailure: (cause: Cause.Cause<E>) => Effect.Effect<void>
  /** Passes that run at once, each woken by its own notification; one unless said. */
  readonly workers?: number
  /**
   * The `loop` label of `loop_last_pass_timestamp_seconds`, set when a pass completes; left out, the loop is not
   * reported (one whose timer runs for minutes would look stuck).
   */
  readonly liveness?: string
  /**
   * The longest a pass may run: past it, the pass is abandoned (interrupted in the background) and counted as
   * failed, and the loop goes on. A query on a connection whose socket died without a close never answers, and a
   * pass waiting on it would stop the loop for good.
   */
  readonly passTimeout?: Duration.Input
}

/** A pass that took longer than `passTimeout`. */
export class PassTimedOut extends Error {
  override readonly name = "PassTimedOut"
}

export interface WakeLoop {
  /**
   * Something falls due at `at` (epoch ms): wakes a worker unless one already plans a pass by then. A wake-up
   * while every worker is in a pass is kept for the first to finish.
   */
  readonly wakeBy: (at: number) => Effect.Effect<void>
}

/** An `onFailure` that logs the failed pass as a warning with its cause. */
export const warnFailedPass = (message: string) => (cause: Cause.Cause<unknown>) =>
  Effect.logWarning(message).pipe(Effect.annotateLogs({ cause: String(cause) }))

/**
 * A background loop that wakes on a Postgres NOTIFY or a timer and drains: a pass at once, then one after every
 * wake-up, until its scope closes (a pass in flight is interrupted with it). A pass's failure never ends the loop.
 */
export const wakeLoop = <E, R>(
  options: WakeLoopOptions<E, R>,
): Effect.Effect<WakeLoop, never, Db | Scope.Scope | R> =>
  Effect.gen(function* () {
    const db = yield* Db
    const poll = Duration.toMillis(options.poll)
    const wakeUps = yield* Queue.sliding<void>(1)
    const poke = () => void Queue.offerUnsafe(wakeUps, undefined)
    /** When each worker plans its next pass (epoch ms); -Infinity while it is in one. */
    const planned = Array.from({ length: options.workers ?? 1 }, () => Number.NEGATIVE_INFINITY)

    const passed =
      options.liveness === undefined ? undefined : metrics.loopLastPass({ loop: options.liveness })
    if (passed !== undefined) {
      // Until its first pass ends, the loop's last pass is its start, as an actor's is: never 0, which reads as
      // a loop that has not passed for decades.
      passed.set((yield* Clock.currentTimeMillis) / 1000)
      yield* Effect.addFinalizer(() => Effect.sync(passed.release))
    }
    const limit =
      options.passTimeout === undefined ? undefined : Duration.fromInputUnsafe(options.passTimeout)
    /**
     * A pass bounded by `passTimeout`: it runs in a fiber of its own, which is left to its interruption when the
     * time is up, as a transaction's ROLLBACK on a dead socket would hold the loop however it is interrupted.
     */
    const bounded = (drain: typeof options.drain) =>
      limit === undefined
        ? drain
        : Effect.gen(function* () {
            const fiber = yield* Effect.forkChild(drain)
            const done = yield* Fiber.await(fiber).pipe(Effect.timeoutOption(limit))
            if (done._tag === "Some") return yield* done.value
            yield* Effect.forkChild(Fiber.interrupt(fiber))
            return yield* Effect.die(
              new PassTimedOut(`pass took longer than ${Duration.toMillis(limit)} ms; abandoned`),
            )
          })

    const worker = (index: number) =>
      Effect.gen(function* () {
        planned[index] = Number.NEGATIVE_INFINITY
        const due = yield* bounded(options.drain).pipe(
          // A pass every few seconds, mostly finding nothing, would be a trace of its own each time; what a pass
          // sends on (an outbox row, a retry) carries the trace of the work that made it.
          Effect.withTracerEnabled(false),
          Effect.tap(() =>
            passed === undefined
              ? Effect.void
              : Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => passed.set(now / 1000))),
          ),
          Effect.catchCause((cause) => options.onFailure(cause).pipe(Effect.as(undefined))),
        )
        const now = yield* Clock.currentTimeMillis
        const wait = Math.max(0, Math.min(due instanceof Date ? due.getTime() - now + 1 : poll, poll))
        planned[index] = now + wait
        if (wait > 0) yield* Queue.take(wakeUps).pipe(Effect.timeoutOption(Duration.millis(wait)))
      }).pipe(Effect.forever)

    yield* db.listen(options.channel, poke, poke)
    for (let index = 0; index < planned.length; index++) yield* Effect.forkScoped(worker(index))

    return {
      wakeBy: (at) =>
        Effect.sync(() => {
          if (at < Math.min(...planned)) poke()
        }),
    }
  })

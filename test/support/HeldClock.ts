import { Clock, Effect } from "effect"

const realClock = Clock.Clock.defaultValue()
/** While set, the wall clock of `heldClock` stands still at this instant (timers still run in real time). */
let heldAt: number | undefined
const now = () => heldAt ?? realClock.currentTimeMillisUnsafe()

/** A wall clock a test can hold still; give it to the service as its `Clock`. */
export const heldClock: Clock.Clock = {
  currentTimeMillisUnsafe: now,
  currentTimeMillis: Effect.sync(now),
  currentTimeNanosUnsafe: () => BigInt(now()) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => BigInt(now()) * 1_000_000n),
  monotonicTimeNanosUnsafe: () => realClock.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: realClock.monotonicTimeNanos,
  sleep: (duration) => realClock.sleep(duration),
}

/** Holds `heldClock` still for the rest of the scope, so a block window cannot lapse while the test runs. */
export const holdClock = Effect.acquireRelease(
  Effect.sync(() => void (heldAt = realClock.currentTimeMillisUnsafe())),
  () => Effect.sync(() => void (heldAt = undefined)),
)

/** Moves the held clock on by `millis` (inside `holdClock`'s scope): the time a test says has passed, exactly. */
export const advanceHeldClock = (millis: number) =>
  Effect.sync(() => {
    if (heldAt === undefined) throw new Error("the clock is not held")
    heldAt += millis
  })

import { Effect, Exit, FiberSet, type Scope } from "effect"
import { unavailableIn } from "../../platform/Unavailable.ts"

/** A batch at least this large means load: the next one rests before it starts, to gather more callers. */
const LOADED = 16

/**
 * Opportunistic batching: callers submit one item each; one batch runs at a time, taking whatever has queued up
 * (at least one item, at most `max`) when the previous one ends. Nothing waits for a batch to fill: an idle
 * batcher starts at the end of the current turn of the event loop, so the callers of one turn (the messages of one
 * socket read) share a statement rather than the first going alone and the rest waiting for it; a busy one
 * gathers while the previous batch is in flight, so a statement serves many callers. Under load (a batch of at
 * least `LOADED`), the next batch also rests as long as the last one took, unless a full batch waits: a statement
 * then serves more callers, and its fixed cost is paid less often. One at a time: two in flight made smaller
 * batches, so more statements for the same work (docs/decisions/013-webhook-batching.md). `run` returns one
 * output per input, in order; if it fails while its dependencies answer, each input is run again alone, and a
 * caller gets the failure only if its own input fails (a dependency unavailable fails every caller). Kept to
 * plain arrays and callbacks: it sits on the hot path of every delivery.
 */
export const batched = <I, O>(options: {
  readonly max: number
  readonly run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>>
}): Effect.Effect<(input: I) => Effect.Effect<O>, never, Scope.Scope> =>
  Effect.gen(function* () {
    // Batches run as fibers of this scope: closing it interrupts them, and their callers get the interruption.
    const runFiber = yield* FiberSet.makeRuntime()
    interface Waiter {
      readonly input: I
      readonly resume: (effect: Effect.Effect<O>) => void
    }
    let waiting: Array<Waiter> = []
    let running = false
    let soon = false
    let resting = false
    const pumpSoon = () => {
      if (running || soon || resting) return
      soon = true
      setImmediate(() => {
        soon = false
        pump()
      })
    }
    const pump = () => {
      if (!running && waiting.length > 0) {
        const batch = waiting.length <= options.max ? waiting : waiting.slice(0, options.max)
        waiting = batch === waiting ? [] : waiting.slice(options.max)
        running = true
        const started = performance.now()
        const fiber = runFiber(options.run(batch.map((w) => w.input)))
        fiber.addObserver((exit) => {
          if (
            Exit.isFailure(exit) &&
            batch.length > 1 &&
            !Exit.hasInterrupts(exit) &&
            unavailableIn(exit.cause) === undefined
          )
            return alone(batch, started)
          running = false
          for (let i = 0; i < batch.length; i++) {
            batch[i]!.resume(
              Exit.isSuccess(exit)
                ? i < exit.value.length
                  ? Effect.succeed(exit.value[i]!)
                  : Effect.die(new Error("batch returned fewer outputs than inputs"))
                : Effect.failCause(exit.cause),
            )
          }
          pumpAfter(batch.length >= LOADED ? performance.now() - started : 0)
        })
      }
    }
    /**
     * A batch that failed, with its dependencies answering, runs again one item at a time, still as the one batch
     * in flight: an item the statement refuses fails its own caller only, not the others that shared its statement.
     */
    const alone = (batch: ReadonlyArray<Waiter>, started: number) => {
      const fiber = runFiber(Effect.forEach(batch, (w) => Effect.exit(options.run([w.input]))))
      fiber.addObserver((exit) => {
        running = false
        for (let i = 0; i < batch.length; i++) {
          // The run of each item is an exit of its own: only an interruption fails the whole.
          const own = Exit.isSuccess(exit) ? exit.value[i]! : Exit.failCause(exit.cause)
          batch[i]!.resume(
            Exit.isSuccess(own)
              ? own.value.length > 0
                ? Effect.succeed(own.value[0]!)
                : Effect.die(new Error("batch returned fewer outputs than inputs"))
              : Effect.failCause(own.cause),
          )
        }
        pumpAfter(batch.length >= LOADED ? performance.now() - started : 0)
      })
    }
    /** The next batch, after resting `rest` ms (a timer's resolution is 1 ms) unless a full batch waits. */
    const pumpAfter = (rest: number) => {
      if (waiting.length >= options.max || rest < 1) return pump()
      resting = true
      setTimeout(() => {
        resting = false
        pump()
      }, rest)
    }
    return (input: I) =>
      Effect.callback<O>((resume) => {
        const waiter: Waiter = { input, resume }
        waiting.push(waiter)
        pumpSoon()
        // A caller interrupted before its batch started leaves the queue; one in a running batch just stops waiting.
        return Effect.sync(() => {
          const i = waiting.indexOf(waiter)
          if (i >= 0) waiting.splice(i, 1)
        })
      })
  })

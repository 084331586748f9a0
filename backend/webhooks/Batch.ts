import { Deferred, Effect, Exit, Queue, type Scope } from "effect"

/**
 * Opportunistic batching: callers submit one item each; `workers` fibers each take whatever has queued up (at
 * least one item, at most `max`) and run it as one batch. Nothing waits for a batch to fill: an idle system runs
 * batches of one, a busy one batches while earlier batches are in flight, so a statement serves many callers.
 * `run` returns one output per input, in order; if it fails, every caller of that batch gets the failure.
 */
export const batched = <I, O>(options: {
  readonly workers: number
  readonly max: number
  readonly run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>>
}): Effect.Effect<(input: I) => Effect.Effect<O>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<readonly [I, Deferred.Deferred<O>]>()
    const worker = Effect.gen(function* () {
      const batch = yield* Queue.takeBetween(queue, 1, options.max)
      const exit = yield* Effect.exit(options.run(batch.map(([input]) => input)))
      batch.forEach(([, deferred], i) => {
        Deferred.doneUnsafe(
          deferred,
          Exit.isSuccess(exit)
            ? i < exit.value.length
              ? Effect.succeed(exit.value[i]!)
              : Effect.die(new Error("batch returned fewer outputs than inputs"))
            : Effect.failCause(exit.cause),
        )
      })
    }).pipe(Effect.forever)
    for (let i = 0; i < options.workers; i++) yield* Effect.forkScoped(worker)
    return (input: I) =>
      Effect.gen(function* () {
        const deferred = yield* Deferred.make<O>()
        yield* Queue.offer(queue, [input, deferred])
        return yield* Deferred.await(deferred)
      })
  })

import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { DependencyUnavailable } from "../../backend/platform/Unavailable.ts"
import { batched } from "../../backend/webhooks/delivery/Batch.ts"

/** A batcher whose batches are recorded, each before `step` answers it (given its inputs and number, from 1). */
const recorded = <O>(
  max: number,
  step: (inputs: ReadonlyArray<number>, n: number) => Effect.Effect<ReadonlyArray<O>>,
) =>
  Effect.gen(function* () {
    const batches: Array<ReadonlyArray<number>> = []
    const submit = yield* batched({
      max,
      run: (inputs: ReadonlyArray<number>) =>
        Effect.suspend(() => {
          batches.push(inputs)
          return step(inputs, batches.length)
        }),
    })
    return { batches, submit }
  })

/** A batcher whose batches are recorded, each doubling its inputs once `gate` (if any) opens. */
const recording = (max: number, gate?: Deferred.Deferred<void>) =>
  recorded(max, (inputs, n) =>
    (gate !== undefined && n === 1 ? Deferred.await(gate) : Effect.void).pipe(
      Effect.as(inputs.map((i) => i * 2)),
    ),
  )

/**
 * A batcher whose batches are recorded, each dying with what `defect` gives for its inputs and its number (from 1),
 * or answering its inputs; `tags` submits inputs together and says which callers succeeded.
 */
const failing = (defect: (inputs: ReadonlyArray<number>, n: number) => unknown) =>
  Effect.gen(function* () {
    const { batches, submit } = yield* recorded(512, (inputs, n) => {
      const failure = defect(inputs, n)
      return failure === undefined ? Effect.succeed(inputs) : Effect.die(failure)
    })
    const tags = (inputs: ReadonlyArray<number>) =>
      Effect.forEach(inputs, (i) => Effect.map(Effect.exit(submit(i)), (exit) => exit._tag), {
        concurrency: "unbounded",
      })
    return { batches, submit, tags }
  })

/**
 * The batches made when `first` callers start a batch that takes 300 ms, one caller arrives during it and one 50 ms
 * after it ended: the last two go together only if the batcher rested after the first batch.
 */
const afterSlowBatch = (first: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    const { batches, submit } = yield* recorded(512, (inputs, n) =>
      (n === 1 ? Effect.sleep("300 millis") : Effect.void).pipe(Effect.as(inputs)),
    )
    const slow = yield* Effect.forkChild(Effect.forEach(first, submit, { concurrency: "unbounded" }))
    yield* Effect.sleep("100 millis")
    const during = yield* Effect.forkChild(submit(100))
    yield* Fiber.join(slow)
    yield* Effect.sleep("50 millis")
    const after = yield* Effect.forkChild(submit(101))
    yield* Fiber.join(during)
    yield* Fiber.join(after)
    return batches
  })

describe("webhook batcher", () => {
  it.live("gives the callers of one turn of the event loop one batch, each its own output", () =>
    Effect.gen(function* () {
      const { batches, submit } = yield* recording(512)
      const outputs = yield* Effect.forEach([1, 2, 3, 4, 5], submit, { concurrency: "unbounded" })
      assert.deepStrictEqual(outputs, [2, 4, 6, 8, 10])
      assert.deepStrictEqual(batches, [[1, 2, 3, 4, 5]])
    }).pipe(Effect.scoped),
  )

  it.live(
    "runs one batch at a time: callers arriving meanwhile go together next, at most `max` at once",
    () =>
      Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const { batches, submit } = yield* recording(4, gate)
        const first = yield* Effect.forkChild(submit(1))
        yield* Effect.yieldNow
        yield* Effect.sleep("10 millis")
        assert.deepStrictEqual(batches, [[1]])
        const rest = yield* Effect.forkChild(
          Effect.forEach([2, 3, 4, 5, 6, 7, 8], submit, { concurrency: "unbounded" }),
        )
        yield* Effect.sleep("10 millis")
        assert.strictEqual(batches.length, 1)
        yield* Deferred.succeed(gate, undefined)
        assert.strictEqual(yield* Fiber.join(first), 2)
        assert.deepStrictEqual(yield* Fiber.join(rest), [4, 6, 8, 10, 12, 14, 16])
        assert.deepStrictEqual(batches, [[1], [2, 3, 4, 5], [6, 7, 8]])
      }).pipe(Effect.scoped),
  )

  it.live(
    "runs each input of a batch that fails alone: only the caller whose own input fails gets the failure",
    () =>
      Effect.gen(function* () {
        // A statement that fails whenever it holds the input 2, as Postgres refuses a whole statement for one row.
        const { batches, tags, submit } = yield* failing((inputs) =>
          inputs.includes(2) ? new Error("statement failed") : undefined,
        )
        assert.deepStrictEqual(yield* tags([1, 2, 3]), ["Success", "Failure", "Success"])
        assert.deepStrictEqual(batches, [[1, 2, 3], [1], [2], [3]])
        assert.strictEqual(yield* submit(4), 4)
        assert.deepStrictEqual(batches.at(-1), [4])
      }).pipe(Effect.scoped),
  )

  it.live("fails every caller of a batch whose dependency is unavailable, without running each alone", () =>
    Effect.gen(function* () {
      const { batches, tags } = yield* failing((_, n) =>
        n === 1
          ? new DependencyUnavailable({ dependency: "postgres", reason: "connection refused" })
          : undefined,
      )
      assert.deepStrictEqual(yield* tags([1, 2]), ["Failure", "Failure"])
      assert.deepStrictEqual(batches, [[1, 2]])
    }).pipe(Effect.scoped),
  )

  it.live("fails the one caller of a batch of one that fails, and serves the next batch", () =>
    Effect.gen(function* () {
      let calls = 0
      const submit = yield* batched({
        max: 512,
        run: (inputs: ReadonlyArray<number>) =>
          ++calls === 1 ? Effect.die(new Error("statement failed")) : Effect.succeed(inputs),
      })
      assert.strictEqual((yield* Effect.exit(submit(1)))._tag, "Failure")
      assert.strictEqual(calls, 1, "a batch of one is not run again")
      assert.strictEqual(yield* submit(2), 2)
    }).pipe(Effect.scoped),
  )

  it.live("under load, waits as long as the last batch took before the next, gathering its callers", () =>
    Effect.gen(function* () {
      const loaded = Array.from({ length: 16 }, (_, i) => i)
      assert.deepStrictEqual(yield* afterSlowBatch(loaded), [loaded, [100, 101]])
    }).pipe(Effect.scoped),
  )

  it.live("after a light batch, starts the next at once", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* afterSlowBatch([1]), [[1], [100], [101]])
    }).pipe(Effect.scoped),
  )
})

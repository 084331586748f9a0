import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { Db } from "../../backend/platform/Db.ts"
import { readCache } from "../../backend/platform/ReadCache.ts"
import { DependencyUnavailable } from "../../backend/platform/Unavailable.ts"
import { testPlatform } from "../support/TestPlatform.ts"

const FRESH_MS = 5_000

/** A read that counts itself and answers `value` once its gate opens (at once when it has none). */
const gatedRead = () => {
  const state = { reads: 0, gate: undefined as Deferred.Deferred<void> | undefined, value: "v1" }
  const read = Effect.gen(function* () {
    state.reads++
    const value = state.value
    if (state.gate !== undefined) yield* Deferred.await(state.gate)
    return value
  })
  return { state, read }
}

/** Lets every forked fiber run as far as it can. */
const settle = Effect.gen(function* () {
  for (let i = 0; i < 10; i++) yield* Effect.yieldNow
})

describe("readCache", () => {
  it.effect("reads once for the callers that find no value together, and again once the value is stale", () =>
    Effect.gen(function* () {
      const cache = readCache<string, string, never>({ freshMillis: FRESH_MS, maxSize: 10 })
      const { state, read } = gatedRead()
      state.gate = yield* Deferred.make<void>()
      const callers = yield* Effect.forEach(Array.from({ length: 5 }), () =>
        Effect.forkChild(cache.get("k", () => read)),
      )
      yield* settle
      assert.strictEqual(state.reads, 1)
      yield* Deferred.succeed(state.gate, undefined)
      assert.deepStrictEqual(yield* Effect.forEach(callers, Fiber.join), ["v1", "v1", "v1", "v1", "v1"])

      state.gate = undefined
      state.value = "v2"
      assert.strictEqual(yield* cache.get("k", () => read), "v1")
      assert.strictEqual(state.reads, 1)
      yield* TestClock.adjust(FRESH_MS)
      assert.strictEqual(yield* cache.get("k", () => read), "v2")
      assert.strictEqual(state.reads, 2)
    }),
  )

  it.effect("after a forget, reads again: the read it overtook answers its callers but is not kept", () =>
    Effect.gen(function* () {
      const cache = readCache<string, string, never>({ freshMillis: FRESH_MS, maxSize: 10 })
      const { state, read } = gatedRead()
      state.gate = yield* Deferred.make<void>()
      const before = yield* Effect.forkChild(cache.get("k", () => read))
      yield* settle
      cache.forget("k")
      const gate = state.gate
      state.gate = undefined
      state.value = "v2"
      // A caller after the change does not join the read that began before it.
      assert.strictEqual(yield* cache.get("k", () => read), "v2")
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(before), "v1")
      assert.strictEqual(yield* cache.get("k", () => read), "v2")
      assert.strictEqual(state.reads, 2)

      cache.forget()
      state.value = "v3"
      assert.strictEqual(yield* cache.get("k", () => read), "v3")
    }),
  )

  it.effect("keeps a caller's read going for the others when that caller is interrupted", () =>
    Effect.gen(function* () {
      const cache = readCache<string, string, never>({ freshMillis: FRESH_MS, maxSize: 10 })
      const { state, read } = gatedRead()
      state.gate = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(cache.get("k", () => read))
      yield* settle
      const second = yield* Effect.forkChild(cache.get("k", () => read))
      yield* settle
      yield* Fiber.interrupt(first)
      yield* Deferred.succeed(state.gate, undefined)
      assert.strictEqual(yield* Fiber.join(second), "v1")
      assert.strictEqual(state.reads, 1)
    }),
  )

  it.effect("answers with the last value while Postgres does not, and fails when it has none", () =>
    Effect.gen(function* () {
      const cache = readCache<string, string, never>({ freshMillis: FRESH_MS, maxSize: 10 })
      const down = Effect.die(new DependencyUnavailable({ dependency: "postgres", reason: "ECONNREFUSED" }))
      assert.isTrue(Exit.isFailure(yield* Effect.exit(cache.get("k", () => down))))
      assert.strictEqual(yield* cache.get("k", () => Effect.succeed("v1")), "v1")
      yield* TestClock.adjust(FRESH_MS)
      assert.strictEqual(yield* cache.get("k", () => down), "v1")
      // A bug is not an outage: it fails its callers even with a value at hand.
      yield* TestClock.adjust(FRESH_MS)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(cache.get("k", () => Effect.die(new Error("bug"))))))
    }),
  )

  it.effect(
    "keeps only the values `keep` allows (a caller that joined a read of another reads again), and at most `maxSize` keys, the oldest written first out",
    () =>
      Effect.gen(function* () {
        const cache = readCache<string, string, never>({
          freshMillis: FRESH_MS,
          maxSize: 2,
          keep: (value) => value !== "refused",
        })
        const { state, read } = gatedRead()
        state.value = "refused"
        yield* cache.get("k", () => read)
        yield* cache.get("k", () => read)
        assert.strictEqual(state.reads, 2)

        // A caller that joined a read of a value that may not be kept reads again: that read began before it.
        state.gate = yield* Deferred.make<void>()
        const first = yield* Effect.forkChild(cache.get("k", () => read))
        yield* settle
        const joined = yield* Effect.forkChild(cache.get("k", () => read))
        yield* settle
        const gate = state.gate
        state.gate = undefined
        state.value = "granted"
        yield* Deferred.succeed(gate, undefined)
        assert.strictEqual(yield* Fiber.join(first), "refused")
        assert.strictEqual(yield* Fiber.join(joined), "granted")
        assert.strictEqual(state.reads, 4)

        state.reads = 2
        state.value = "v"
        for (const key of ["a", "b", "c"]) yield* cache.get(key, () => read)
        assert.strictEqual(state.reads, 5)
        yield* cache.get("c", () => read)
        yield* cache.get("b", () => read)
        assert.strictEqual(state.reads, 5)
        yield* cache.get("a", () => read)
        assert.strictEqual(state.reads, 6)
      }),
  )
})

describe("readCache, reading Postgres", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect(
      "reads outside the transaction of the caller that starts the read: never its uncommitted rows",
      () =>
        Effect.gen(function* () {
          const db = yield* Db
          yield* db.query((sql) => sql`create table cache_probe (note text primary key)`)
          yield* db.query((sql) => sql`insert into cache_probe (note) values ('committed')`)
          const cache = readCache<string, ReadonlyArray<string>, never>({
            freshMillis: FRESH_MS,
            maxSize: 10,
          })
          const read = () =>
            db
              .query((sql) => sql<Array<{ note: string }>>`select note from cache_probe order by note`)
              .pipe(Effect.map((rows) => rows.map((row) => row.note)))
          const seen = yield* db
            .transaction(
              db
                .query((sql) => sql`insert into cache_probe (note) values ('uncommitted')`)
                .pipe(
                  Effect.andThen(cache.get("k", read)),
                  Effect.andThen((value) => Effect.fail({ value })),
                ),
            )
            .pipe(Effect.flip)
          assert.deepStrictEqual(seen.value, ["committed"])
          assert.deepStrictEqual(yield* cache.get("k", read), ["committed"])
        }),
    )
  })
})

import { Clock, Deferred, Effect } from "effect"
import { outsideTransaction } from "./Db.ts"
import { unavailableIn } from "./Unavailable.ts"

/**
 * Values read from Postgres, kept by key for `freshMillis` and dropped at once by `forget` (a change notification).
 *
 * - Callers that find no fresh value together wait for one read, so a burst that finds a value expired (a
 *   gateway's requests in flight, a claimed batch of attempts) makes one statement, not one each. The read runs
 *   detached, and outside any transaction of the caller that started it: no caller's interruption or commit ends
 *   it for the others, its value is no caller's uncommitted one, and its failure is each waiting caller's.
 * - While Postgres does not answer, nothing can have changed: the last value read still holds.
 * - A read that a `forget` overtook answers the callers already waiting but is not kept, and later callers start
 *   a read of their own: it may predate the change.
 * - `keep` says which values may be kept (a refusal may not, when a grant must count from its commit); a caller
 *   that joined a read whose value may not be kept reads again itself.
 */
export const readCache = <K, V, E>(options: {
  readonly freshMillis: number
  readonly maxSize: number
  readonly keep?: (value: V) => boolean
}) => {
  const entries = new Map<K, { readonly at: number; readonly value: V }>()
  const reading = new Map<K, Deferred.Deferred<V, E>>()
  let generation = 0

  /** The key's value; `read` is called only when no fresh value is at hand. */
  const get = <R>(key: K, read: () => Effect.Effect<V, E, R>): Effect.Effect<V, E, R> =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const hit = entries.get(key)
      if (hit !== undefined && now - hit.at < options.freshMillis) return hit.value
      const waiting = reading.get(key)
      if (waiting !== undefined) {
        const value = yield* Deferred.await(waiting)
        // A value that may not be kept must be as new as the caller: the read it joined may predate a change.
        return options.keep === undefined || options.keep(value) ? value : yield* read()
      }
      const done = yield* Deferred.make<V, E>()
      reading.set(key, done)
      const seen = generation
      yield* outsideTransaction(read()).pipe(
        Effect.catchCause((cause) =>
          hit !== undefined && unavailableIn(cause) !== undefined
            ? Effect.succeed(hit.value)
            : Effect.failCause(cause),
        ),
        Effect.tap((value) =>
          Effect.sync(() => {
            if (seen !== generation || (options.keep !== undefined && !options.keep(value))) return
            entries.delete(key)
            if (entries.size >= options.maxSize) entries.delete(entries.keys().next().value!)
            entries.set(key, { at: now, value })
          }),
        ),
        Effect.onExit((exit) => {
          if (reading.get(key) === done) reading.delete(key)
          return Deferred.done(done, exit)
        }),
        Effect.forkDetach,
      )
      return yield* Deferred.await(done)
    })

  return {
    get,
    /** The key's value must be read again; `undefined`: every key's. */
    forget: (key?: K) => {
      generation++
      if (key === undefined) {
        entries.clear()
        reading.clear()
      } else {
        entries.delete(key)
        reading.delete(key)
      }
    },
  }
}

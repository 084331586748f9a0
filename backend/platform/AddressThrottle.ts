import { Clock, Effect, type Exit, Schedule, Schema } from "effect"
import { throttleSource } from "./ClientAddress.ts"
import { Db } from "./Db.ts"

/** A source that keeps failing for an hour still gets a block Postgres can compute (2^30 s, then capped). */
const MAX_EXPONENT = 30

/**
 * Lookups one source may have running at once in one process under one throttle: a person's browser makes one at
 * a time, and a guesser's burst cannot outrun the block its first failures set.
 */
const LOOKUPS_IN_PROGRESS = 4

/**
 * A lookup refused for the caller's address: it looked up too many things that were not there lately
 * (`failures`, whether or not this one is), or it has too many lookups under way at once (`in_progress`).
 */
export class AddressThrottled extends Schema.TaggedError<AddressThrottled>()("AddressThrottled", {
  reason: Schema.Literals(["failures", "in_progress"]),
  retryAfterSeconds: Schema.Number,
}) {}

export interface AddressThrottleOptions {
  /** Whose failures these are (`address_failures.scope`): each throttle counts and blocks on its own. */
  readonly scope: string
  /** What its log lines call the things looked up: `<what> throttled` when a source is blocked. */
  readonly what: string
  /** Failures a source may have in an hour before each further one blocks it (at least 1). */
  readonly freeFailures: number
  /** The longest block; blocks double from one second up to it. */
  readonly maxBlockSeconds: number
  /** Counts a refusal, by reason, in the throttle's own metric. */
  readonly refused: (reason: AddressThrottled["reason"]) => void
}

/**
 * Guessing secrets in URLs (links, codes, document names) is slowed down per source address (`throttleSource`):
 * past `freeFailures` wrong ones in an hour, each further one blocks the source for twice as long as the one
 * before, up to `maxBlockSeconds`. The counts live in Postgres (`address_failures`, by scope), so every process
 * sees the same. A request from a blocked source is refused before its lookup and counts as one more failure, so
 * a source that keeps guessing stays blocked; a valid secret opened meanwhile is refused too (the guesser may
 * hold one), and never clears the count (else one valid secret would reset it). Needs a scope: it prunes the
 * scope's quiet sources every ten minutes while it lives.
 */
export const makeAddressThrottle = (options: AddressThrottleOptions) =>
  Effect.gen(function* () {
    const db = yield* Db
    const { scope } = options
    const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

    /** Until when `source` is blocked at `at`, if it is. */
    const blockedUntil = (source: string, at: Date) =>
      db
        .query(
          (sql) => sql<Array<{ blocked_until: Date }>>`
            select blocked_until from address_failures
            where scope = ${scope} and source = ${source} and blocked_until > ${at}`,
        )
        .pipe(Effect.map(([row]) => row?.blocked_until))

    /**
     * Counts a failure of `source`; past `freeFailures` in the hour, the n-th blocks it for 2^(n - free - 1)
     * seconds, at most `maxBlockSeconds` (a first failure never blocks). A quiet hour forgets the count. Answers
     * the block, if any.
     */
    const record = (source: string, at: Date) =>
      db
        .query(
          (sql) => sql<Array<{ blocked_until: Date | null }>>`
            insert into address_failures as f (scope, source, failures, last_failure_at)
            values (${scope}, ${source}, 1, ${at})
            on conflict (scope, source) do update set
              failures = case when f.last_failure_at < ${at}::timestamptz - interval '1 hour'
                              then 1 else f.failures + 1 end,
              last_failure_at = excluded.last_failure_at,
              blocked_until = case
                when f.last_failure_at >= ${at}::timestamptz - interval '1 hour'
                     and f.failures + 1 > ${options.freeFailures}
                then ${at}::timestamptz + make_interval(secs => least(
                  power(2, least(f.failures - ${options.freeFailures}, ${MAX_EXPONENT})), ${options.maxBlockSeconds}))
              end
            returning blocked_until`,
        )
        .pipe(Effect.map(([row]) => row?.blocked_until ?? undefined))

    const prune = (at: Date) =>
      db.query(
        (sql) => sql`
          delete from address_failures
          where scope = ${scope} and last_failure_at < ${at}::timestamptz - interval '1 hour'
            and (blocked_until is null or blocked_until < ${at})`,
      )

    /** Sources with a lookup in progress in this process, and how many. */
    const inProgress = new Map<string, number>()
    const enter = (source: string) => {
      const count = inProgress.get(source) ?? 0
      if (count >= LOOKUPS_IN_PROGRESS) return false
      inProgress.set(source, count + 1)
      return true
    }
    const leave = (source: string) => {
      const count = (inProgress.get(source) ?? 1) - 1
      if (count === 0) inProgress.delete(source)
      else inProgress.set(source, count)
    }

    /** Fails with AddressThrottled while `source` is blocked, counting the attempt. */
    const admit = (source: string) =>
      Effect.gen(function* () {
        const at = yield* now
        if ((yield* blockedUntil(source, at)) === undefined) return
        const until = yield* record(source, at)
        options.refused("failures")
        return yield* new AddressThrottled({
          reason: "failures",
          retryAfterSeconds: Math.max(1, Math.ceil(((until?.getTime() ?? 0) - at.getTime()) / 1000)),
        })
      })

    const recordMiss = (source: string) =>
      Effect.gen(function* () {
        const until = yield* record(source, yield* now)
        if (until !== undefined) {
          yield* Effect.logWarning(`${options.what} throttled`).pipe(
            Effect.annotateLogs({ scope, source, blocked_until: until.toISOString() }),
          )
        }
      })

    /**
     * Runs `lookup` for a request from `address`, unless its source is blocked or already has
     * `LOOKUPS_IN_PROGRESS` lookups running here (AddressThrottled); a lookup that `missed` counts as a failure of
     * the source before its slot is given up, so a burst of guesses sent at once meets the block as soon as one
     * of them sets it.
     */
    const guard = <A, E, R>(
      address: string,
      lookup: Effect.Effect<A, E, R>,
      missed: (exit: Exit.Exit<A, E>) => boolean,
    ): Effect.Effect<A, E | AddressThrottled, R> => {
      const source = throttleSource(address)
      return Effect.acquireUseRelease(
        Effect.sync(() => enter(source)),
        (entered) =>
          entered
            ? Effect.andThen(
                admit(source),
                Effect.onExit(lookup, (exit) => (missed(exit) ? recordMiss(source) : Effect.void)),
              )
            : Effect.sync(() => options.refused("in_progress")).pipe(
                Effect.andThen(
                  Effect.fail(new AddressThrottled({ reason: "in_progress", retryAfterSeconds: 1 })),
                ),
              ),
        (entered) => (entered ? Effect.sync(() => leave(source)) : Effect.void),
      ).pipe(Effect.withSpan("AddressThrottle.guard", { attributes: { scope } }))
    }

    // Counts of sources quiet for an hour are forgotten anyway; deleting them keeps the table to recent guessers.
    yield* Effect.forkScoped(
      Effect.flatMap(now, prune).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning(`${options.what} failures pruning failed`).pipe(
            Effect.annotateLogs({ scope, cause: String(cause) }),
          ),
        ),
        Effect.repeat(Schedule.spaced("10 minutes")),
      ),
    )

    return { guard }
  })

export type AddressThrottle = Effect.Success<ReturnType<typeof makeAddressThrottle>>

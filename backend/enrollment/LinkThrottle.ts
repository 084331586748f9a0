import { Clock, Context, Effect, type Exit, Layer, Schedule } from "effect"
import { throttleSource } from "../platform/ClientAddress.ts"
import { metrics } from "../platform/Observability.ts"
import { EnrollmentConfig } from "./Config.ts"
import { LinksThrottled } from "./Domain.ts"
import { LinkFailuresRepo } from "./LinkFailuresRepo.ts"

/**
 * Lookups of links and documents one source may have running at once in one process: a renter's browser makes
 * one at a time, and a guesser's burst cannot outrun the block its first failures set.
 */
const LOOKUPS_IN_PROGRESS = 4

/**
 * Guessing enrollment links (and document names) is slowed down per source address: past
 * `ENROLLMENT_LINK_FREE_FAILURES` wrong ones in an hour, each further one blocks the source for twice as long as
 * the one before, up to `ENROLLMENT_LINK_MAX_BLOCK_SECONDS`. The counts live in Postgres, so every process serving
 * the renter's pages sees the same. A request from a blocked source is refused before its link is looked up and
 * counts as one more failure, so a source that keeps guessing stays blocked; a valid link opened meanwhile is
 * refused too (the guesser may hold one), and never clears the count (else one valid link would reset it).
 */
export class LinkThrottle extends Context.Service<LinkThrottle>()("partner-service/enrollment/LinkThrottle", {
  make: Effect.gen(function* () {
    const repo = yield* LinkFailuresRepo
    const config = yield* EnrollmentConfig

    const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

    const record = (source: string, at: Date) =>
      repo.recordFailure(source, at, config.linkFreeFailures, config.linkMaxBlockSeconds)

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

    /** Fails with LinksThrottled while `source` is blocked, counting the attempt. */
    const admit = (source: string) =>
      Effect.gen(function* () {
        const at = yield* now
        if ((yield* repo.blockedUntil(source, at)) === undefined) return
        const until = yield* record(source, at)
        metrics.enrollmentLinksThrottled.inc({ reason: "failures" })
        return yield* new LinksThrottled({
          reason: "failures",
          retryAfterSeconds: Math.max(1, Math.ceil(((until?.getTime() ?? 0) - at.getTime()) / 1000)),
        })
      })

    const recordMiss = (source: string) =>
      Effect.gen(function* () {
        const until = yield* record(source, yield* now)
        if (until !== undefined) {
          yield* Effect.logWarning("enrollment links throttled").pipe(
            Effect.annotateLogs({ source, blocked_until: until.toISOString() }),
          )
        }
      })

    /**
     * Runs `lookup` (of a link, or of a document by name) for a request from `address`, unless its source is
     * blocked or already has `LOOKUPS_IN_PROGRESS` lookups running here (LinksThrottled); a lookup that `missed`
     * counts as a failure of the source before its slot is given up, so a burst of guesses sent at once meets
     * the block as soon as one of them sets it.
     */
    const guard = <A, E, R>(
      address: string,
      lookup: Effect.Effect<A, E, R>,
      missed: (exit: Exit.Exit<A, E>) => boolean,
    ): Effect.Effect<A, E | LinksThrottled, R> => {
      const source = throttleSource(address)
      return Effect.acquireUseRelease(
        Effect.sync(() => enter(source)),
        (entered) =>
          entered
            ? Effect.andThen(
                admit(source),
                Effect.onExit(lookup, (exit) => (missed(exit) ? recordMiss(source) : Effect.void)),
              )
            : Effect.sync(() => metrics.enrollmentLinksThrottled.inc({ reason: "in_progress" })).pipe(
                Effect.andThen(
                  Effect.fail(new LinksThrottled({ reason: "in_progress", retryAfterSeconds: 1 })),
                ),
              ),
        (entered) => (entered ? Effect.sync(() => leave(source)) : Effect.void),
      ).pipe(Effect.withSpan("LinkThrottle.guard"))
    }

    // Counts of sources quiet for an hour are forgotten anyway; deleting them keeps the table to recent guessers.
    yield* Effect.forkScoped(
      Effect.flatMap(now, repo.prune).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("enrollment link failures pruning failed").pipe(
            Effect.annotateLogs({ cause: String(cause) }),
          ),
        ),
        Effect.repeat(Schedule.spaced("10 minutes")),
      ),
    )

    return { guard }
  }),
}) {
  static readonly layer = Layer.effect(LinkThrottle, LinkThrottle.make).pipe(
    Layer.provide(LinkFailuresRepo.layer),
  )
}

import { Clock, Context, Effect, Layer, Schedule } from "effect"
import { throttleSource } from "../platform/ClientAddress.ts"
import { metrics } from "../platform/Observability.ts"
import { EnrollmentConfig } from "./Config.ts"
import { LinksThrottled } from "./Domain.ts"
import { LinkFailuresRepo } from "./LinkFailuresRepo.ts"

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

    /** Fails with LinksThrottled while `address`'s source is blocked. */
    const admit = Effect.fn("LinkThrottle.admit")(function* (address: string) {
      const source = throttleSource(address)
      const at = yield* now
      if ((yield* repo.blockedUntil(source, at)) === undefined) return
      const until = yield* record(source, at)
      metrics.enrollmentLinksThrottled.inc()
      return yield* new LinksThrottled({
        retryAfterSeconds: Math.max(1, Math.ceil(((until?.getTime() ?? at.getTime()) - at.getTime()) / 1000)),
      })
    })

    /** Counts a link (or document name) from `address` that named nothing. */
    const recordFailure = Effect.fn("LinkThrottle.recordFailure")(function* (address: string) {
      const source = throttleSource(address)
      const until = yield* record(source, yield* now)
      if (until !== undefined) {
        yield* Effect.logWarning("enrollment links throttled").pipe(
          Effect.annotateLogs({ source, blocked_until: until.toISOString() }),
        )
      }
    })

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

    return { admit, recordFailure }
  }),
}) {
  static readonly layer = Layer.effect(LinkThrottle, LinkThrottle.make).pipe(
    Layer.provide(LinkFailuresRepo.layer),
  )
}

import { Cause, Clock, Duration, Effect, Layer, Schedule } from "effect"
import { ack, type ActorDefinition, nak } from "../platform/ActorDefinition.ts"
import { unavailableIn } from "../platform/Unavailable.ts"
import { EligibilityDecisions } from "./EligibilityDecisions.ts"
import { ELIGIBILITY_PARTITIONS, EligibilityRequested } from "./Events.ts"

/** Deliveries of one request that may fail before its prospect goes to `error`. */
export const ELIGIBILITY_ATTEMPTS = 5

/** 200 ms, 400 ms, 800 ms, 1.6 s between attempts: a decision that fails this often is not transient. */
const retryDelay = (deliveryCount: number) => Duration.millis(200 * 2 ** (deliveryCount - 1))

/**
 * The eligibility actor: one request of a prospect at a time (requests are partitioned by prospect), decided on
 * the prospect as stored now. A decision that keeps failing moves the prospect to `error` with the reason; a
 * failure to record even that is left to the actor runtime's own retries and dead letters.
 */
export const eligibilityActor: ActorDefinition<EligibilityRequested, EligibilityDecisions> = {
  name: "eligibility",
  stream: "ELIGIBILITY",
  subject: "eligibility.requested.*",
  partitions: ELIGIBILITY_PARTITIONS,
  schema: EligibilityRequested,
  maxDefects: 10,
  handle: (request, delivery) =>
    EligibilityDecisions.use((decisions) => decisions.decide(request)).pipe(
      Effect.as(ack),
      Effect.catchCause((cause) =>
        Effect.gen(function* () {
          // A dependency that did not answer says nothing of the prospect: the actor runtime waits for it.
          if (unavailableIn(cause) !== undefined) return yield* Effect.failCause(cause)
          const reason = Cause.pretty(cause).split("\n")[0] ?? "eligibility check failed"
          yield* Effect.logWarning("eligibility check failed").pipe(
            Effect.annotateLogs({
              prospect_id: request.prospect_id,
              version: request.version,
              attempt: delivery.deliveryCount,
              reason,
            }),
          )
          if (delivery.deliveryCount < ELIGIBILITY_ATTEMPTS) return nak(retryDelay(delivery.deliveryCount))
          yield* EligibilityDecisions.use((decisions) =>
            decisions.fail(request, `eligibility check failed ${delivery.deliveryCount} times: ${reason}`),
          )
          return ack
        }),
      ),
    ),
}

/** How long a prospect may stay `processing` before its decision is asked for again, and how often that is checked. */
const STALE_AFTER_MS = 60_000
const STALE_CHECK = "15 seconds"
const STALE_BATCH = 200

/**
 * In every worker process: prospects left `processing` for a minute are asked for again
 * (`EligibilityDecisions.askAgain`), so none stays there when a failover lost its decision.
 */
export const staleProspectsLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const decisions = yield* EligibilityDecisions
    yield* Effect.forkScoped(
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const asked = yield* decisions.askAgain(new Date(now - STALE_AFTER_MS), STALE_BATCH)
        if (asked > 0)
          yield* Effect.logWarning("prospects left processing asked for their decision again").pipe(
            Effect.annotateLogs({ prospects: asked }),
          )
      }).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("the check for prospects left processing failed").pipe(
            Effect.annotateLogs({ cause: String(Cause.squash(cause)) }),
          ),
        ),
        Effect.repeat(Schedule.spaced(STALE_CHECK)),
      ),
    )
  }),
)

import { Effect } from "effect"
import { Db } from "./Db.ts"
import { Nats } from "./Nats.ts"
import { metrics } from "./Observability.ts"
import type { DependencyUnavailable } from "./Unavailable.ts"

/** How often a paused actor checks whether the dependency answers again. */
const PROBE_INTERVAL = "500 millis"

/**
 * A dependency a handler of `actor` needed did not answer (`pause`): the actor stops pulling until it answers
 * again (`available`). Expected, so logged once as a warning and counted apart from defects.
 */
export const dependencyPause = (actor: string, stopped: () => boolean) =>
  Effect.gen(function* () {
    const db = yield* Db
    const nats = yield* Nats
    let waitingFor: DependencyUnavailable | undefined
    const pause = (unavailable: DependencyUnavailable) =>
      Effect.suspend(() => {
        metrics.actorFailed.inc({ actor, reason: "unavailable" })
        if (waitingFor !== undefined) return Effect.void
        waitingFor = unavailable
        return Effect.logWarning("actor paused: a dependency is unavailable").pipe(
          Effect.annotateLogs({ actor, dependency: unavailable.dependency, reason: unavailable.reason }),
        )
      })
    /** Returns at once unless paused; then once the dependency answers (or the actor stops). */
    const available = Effect.gen(function* () {
      // Every partition's loop may probe at once; the first to see the dependency back resumes the actor.
      for (let waiting = waitingFor; waiting !== undefined && !stopped(); waiting = waitingFor) {
        const probe = waiting.dependency === "postgres" ? db.ping : nats.ping
        const answered = yield* probe.pipe(Effect.timeout("2 seconds"), Effect.exit)
        if (answered._tag === "Failure") yield* Effect.sleep(PROBE_INTERVAL)
        else if (waitingFor === waiting) {
          waitingFor = undefined
          yield* Effect.logInfo("actor resumed").pipe(
            Effect.annotateLogs({ actor, dependency: waiting.dependency }),
          )
        }
      }
    })
    return { pause, available }
  })

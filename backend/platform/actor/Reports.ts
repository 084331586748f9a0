import { Clock, Effect } from "effect"
import { metrics } from "../Observability.ts"

/**
 * What an actor reports: messages handled by outcome, redelivered and failed, each partition's lag, and when its
 * loops last passed. `loop_last_pass_timestamp_seconds{loop="actor:<name>"}` is its slowest partition's last
 * completed pull cycle, so one stuck partition shows however busy the others are. Until its first cycle ends, a
 * partition's last pass is the actor's start, so one that never passes shows as stalled a minute after it. A
 * stopped actor has no last pass to report: left in place, it would read as a loop that stalled.
 */
export const actorReports = (actor: string, partitions: number) =>
  Effect.gen(function* () {
    const handled = {
      Ack: metrics.actorHandled({ actor, outcome: "ack" }),
      Nak: metrics.actorHandled({ actor, outcome: "nak" }),
      Term: metrics.actorHandled({ actor, outcome: "term" }),
    }
    const lag = Array.from({ length: Math.max(partitions, 1) }, (_, partition) =>
      metrics.actorLag({ actor, partition: String(partition) }),
    )
    const lastPass = metrics.loopLastPass({ loop: `actor:${actor}` })
    yield* Effect.addFinalizer(() => Effect.sync(lastPass.release))
    const startedAt = yield* Clock.currentTimeMillis
    /** When each partition's loop last completed a pull cycle (epoch ms). */
    const lastPull = lag.map(() => startedAt)
    lastPass.set(startedAt / 1000)
    return {
      handled: (outcome: keyof typeof handled) => handled[outcome].inc(),
      redelivered: () => metrics.actorRedelivered.inc({ actor }),
      failed: (reason: "undecodable" | "defect" | "batch") => metrics.actorFailed.inc({ actor, reason }),
      lag: (partition: number, pending: number) => lag[partition]!.set(pending),
      passed: (partition: number) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            lastPull[partition] = now
            lastPass.set(Math.min(...lastPull) / 1000)
          }),
        ),
    }
  })

export type ActorReports = Effect.Success<ReturnType<typeof actorReports>>

import { Clock, Effect, Layer } from "effect"
import { Nats } from "../../platform/Nats.ts"
import { wakeLoop, warnFailedPass } from "../../platform/WakeLoop.ts"
import { attemptSubject, encodeAttempt } from "../delivery/Messages.ts"
import { publishStatus } from "../delivery/Router.ts"
import { REPLAY_CHANNEL, ReplaysRepo } from "./Repo.ts"

/**
 * Sends running replays, in every worker process: each second at most `PER_SECOND` events of a replay become
 * new deliveries (the pace is the replay's own `next_batch_at`, so it holds across processes), and each gets its
 * attempt message as a routed delivery does. From there the delivery actor signs, rate-limits, records and retries
 * them as any other. A process stopping after its batch committed and before the publishes leaves deliveries the
 * retry scheduler finds unclaimed and publishes again.
 */

/** Events of one replay sent per second at most: a partner's endpoint just back from an outage is not flooded. */
export const PER_SECOND = 20
/** Replays one pass takes at most; the rest wait for the next. */
const REPLAYS_PER_PASS = 50
const POLL = "1 second"

export const replayRunnerLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const repo = yield* ReplaysRepo
    const nats = yield* Nats
    const pass = Effect.gen(function* () {
      const now = new Date(yield* Clock.currentTimeMillis)
      const created = yield* repo.runDue(now, REPLAYS_PER_PASS, PER_SECOND, 1000)
      yield* nats.publishAll(
        created.map((d) => ({
          subject: nats.subject(attemptSubject(d.endpoint_id)),
          data: encodeAttempt(d),
        })),
      )
      for (const d of created) {
        yield* publishStatus(nats, {
          delivery_id: d.id,
          endpoint_id: d.endpoint_id,
          event: d.event,
          status: "pending",
          series: d.series,
          attempt_number: d.attempt_number,
          at: now.toISOString(),
        })
      }
    })
    yield* wakeLoop({
      channel: REPLAY_CHANNEL,
      poll: POLL,
      drain: pass,
      onFailure: warnFailedPass("webhook replay pass failed; retrying"),
    })
  }),
).pipe(Layer.provide(ReplaysRepo.layer))

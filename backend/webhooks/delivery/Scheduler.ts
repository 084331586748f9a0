import { Clock, Context, Effect, Layer } from "effect"
import { Nats } from "../../platform/Nats.ts"
import { TRACEPARENT } from "../../platform/Tracing.ts"
import { wakeLoop, warnFailedPass } from "../../platform/WakeLoop.ts"
import { type DueAttempt, SchedulerRepo } from "./SchedulerRepo.ts"
import { attemptSubject, encodeAttempt } from "./Messages.ts"

/**
 * The retry scheduler, in every worker process: retries wait in Postgres (`next_retry_at`), not in JetStream
 * (a nak'd message counts against the consumer's `max_ack_pending` until it is redelivered, so the long
 * backoffs of a dead endpoint would block everyone's deliveries). It publishes due attempts (`for update skip
 * locked`, so processes share the work), then sleeps until the earliest scheduled time, woken earlier by NOTIFY
 * `webhook_due` (the retry route) or by this process scheduling an earlier retry. An attempt published five
 * minutes ago and still without an outcome (its message lost, or gone with the process that claimed it) is
 * published again, and so is a new delivery nobody claimed (below). It also releases deliveries held for a
 * suspended endpoint once the endpoint changed.
 */

export const DUE_CHANNEL = "webhook_due"
const BATCH = 500
/** The longest sleep: a safety net for wake-ups that went astray (another process's retry, a lost NOTIFY). */
const POLL = "2 seconds"
/** How often held deliveries are checked against their endpoint's status. */
const RELEASE_EVERY_MS = 1000
/**
 * A new delivery announced this long ago that no claim holds has lost its attempt message (the router stopped
 * before publishing it, or JetStream lost it): it is published again, unless attempt messages are known to be
 * waiting (then it may be among them, and it is published again only after `BACKLOG_UNCLAIMED_MS`). A process
 * judges only after running this long itself, so its delivery actor has seen any backlog.
 */
export const STRANDED_AFTER_MS = 30_000
/** Under a backlog, a new delivery is published again only after this long unclaimed. */
const BACKLOG_UNCLAIMED_MS = 3_600_000

export class Scheduler extends Context.Service<
  Scheduler,
  {
    /** An attempt was scheduled at `at` (epoch ms): wake up in time for it. */
    readonly wakeBy: (at: number) => Effect.Effect<void>
    /** How many attempt messages JetStream said were waiting behind the last one this process received. */
    readonly attemptsWaiting: (count: number) => void
  }
>()("partner-service/webhooks/Scheduler") {
  static readonly layer = Layer.effect(
    Scheduler,
    Effect.gen(function* () {
      const nats = yield* Nats
      const repo = yield* SchedulerRepo
      let lastRelease = 0
      let waiting = 0
      const startedAt = yield* Clock.currentTimeMillis

      const publish = (rows: ReadonlyArray<DueAttempt>) =>
        nats.publishAll(
          rows.map((row) => ({
            subject: nats.subject(attemptSubject(row.endpoint_id)),
            data: encodeAttempt(row),
            // A retry continues its event's trace, as the first attempt did.
            ...(row.traceparent === null ? {} : { options: { headers: { [TRACEPARENT]: row.traceparent } } }),
          })),
        )

      /** Before when a new delivery never claimed is taken for stranded. */
      const unclaimedBefore = (now: number) =>
        new Date(
          now -
            (waiting === 0 && now - startedAt >= STRANDED_AFTER_MS
              ? STRANDED_AFTER_MS
              : BACKLOG_UNCLAIMED_MS),
        )

      /** Releases held deliveries whose endpoint changed, publishes everything due now; the next scheduled time. */
      const pass = Effect.gen(function* () {
        let now = yield* Clock.currentTimeMillis
        if (now - lastRelease >= RELEASE_EVERY_MS) {
          lastRelease = now
          yield* repo.releaseHeld(new Date(now))
        }
        while ((yield* repo.dispatchDue(new Date(now), unclaimedBefore(now), BATCH, publish)) === BATCH) {
          now = yield* Clock.currentTimeMillis
        }
        return yield* repo.nextDue(new Date(now))
      })

      const loop = yield* wakeLoop({
        channel: DUE_CHANNEL,
        poll: POLL,
        drain: pass,
        liveness: "retry_scheduler",
        onFailure: warnFailedPass("webhook scheduler pass failed; retrying"),
      })

      return Scheduler.of({
        wakeBy: loop.wakeBy,
        attemptsWaiting: (count) => {
          waiting = count
        },
      })
    }),
  )
}

import { Clock, Context, Duration, Effect, Layer, Queue } from "effect"
import { Db } from "../platform/Db.ts"
import { Nats } from "../platform/Nats.ts"
import { DeliveryRepo, type DueAttempt } from "./DeliveryRepo.ts"
import { attemptSubject, encodeAttempt } from "./Messages.ts"

/**
 * The retry scheduler, in every worker process: retries wait in Postgres (`next_retry_at`), not in JetStream
 * (a nak'd message counts against the consumer's `max_ack_pending` until it is redelivered, so the long
 * backoffs of a dead endpoint would block everyone's deliveries). It publishes due attempts (`for update skip
 * locked`, so processes share the work), then sleeps until the earliest scheduled time, woken earlier by NOTIFY
 * `webhook_due` (the retry route) or by this process scheduling an earlier retry. An attempt published five
 * minutes ago and still without an outcome (its message lost, or gone with the process that claimed it) is
 * published again.
 */

export const DUE_CHANNEL = "webhook_due"
const BATCH = 500
/** The longest sleep: a safety net for wake-ups that went astray (another process's retry, a lost NOTIFY). */
const POLL_MS = 2000
const PRUNE_EVERY_MS = 60_000

export class Scheduler extends Context.Service<
  Scheduler,
  {
    /** An attempt was scheduled at `at` (epoch ms): wake up in time for it. */
    readonly wakeBy: (at: number) => Effect.Effect<void>
  }
>()("partner-service/webhooks/Scheduler") {
  static readonly layer = Layer.effect(
    Scheduler,
    Effect.gen(function* () {
      const db = yield* Db
      const nats = yield* Nats
      const repo = yield* DeliveryRepo
      const wake = yield* Queue.sliding<void>(1)
      /** When the loop plans to look next (epoch ms); -Infinity while it is looking. */
      let planned = Number.NEGATIVE_INFINITY
      let lastPrune = 0

      const publish = (rows: ReadonlyArray<DueAttempt>) =>
        nats.publishAll(
          rows.map((row) => ({
            subject: nats.subject(attemptSubject(row.endpoint_id)),
            data: encodeAttempt(row),
          })),
        )

      /** Publishes everything due now; the next scheduled time, if any. */
      const pass = Effect.gen(function* () {
        let now = yield* Clock.currentTimeMillis
        while ((yield* repo.dispatchDue(new Date(now), BATCH, publish)) === BATCH) {
          now = yield* Clock.currentTimeMillis
        }
        if (now - lastPrune > PRUNE_EVERY_MS) {
          lastPrune = now
          yield* repo.pruneRateWindows(new Date(now - 2 * 60_000))
        }
        return yield* repo.nextDue(new Date(now))
      })

      const loop = Effect.gen(function* () {
        planned = Number.NEGATIVE_INFINITY
        const next = yield* pass.pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("webhook scheduler pass failed; retrying").pipe(
              Effect.annotateLogs({ cause: String(cause) }),
              Effect.as(undefined),
            ),
          ),
        )
        const now = yield* Clock.currentTimeMillis
        // One millisecond late rather than early: a timer may fire up to a millisecond before its time.
        const sleep = Math.max(0, Math.min(next === undefined ? POLL_MS : next.getTime() - now + 1, POLL_MS))
        planned = now + sleep
        if (sleep > 0) yield* Queue.take(wake).pipe(Effect.timeoutOption(Duration.millis(sleep)))
      }).pipe(Effect.forever)

      const poke = () => void Queue.offerUnsafe(wake, undefined)
      yield* db.listen(DUE_CHANNEL, poke, poke)
      yield* Effect.forkScoped(loop)

      return Scheduler.of({
        wakeBy: (at) =>
          Effect.sync(() => {
            if (at < planned) poke()
          }),
      })
    }),
  )
}

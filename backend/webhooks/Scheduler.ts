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
 * published again, and so is a new delivery nobody claimed (below). It also releases deliveries held for a
 * suspended endpoint once the endpoint changed.
 */

export const DUE_CHANNEL = "webhook_due"
const BATCH = 500
/** The longest sleep: a safety net for wake-ups that went astray (another process's retry, a lost NOTIFY). */
const POLL_MS = 2000
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
      const db = yield* Db
      const nats = yield* Nats
      const repo = yield* DeliveryRepo
      const wake = yield* Queue.sliding<void>(1)
      /** When the loop plans to look next (epoch ms); -Infinity while it is looking. */
      let planned = Number.NEGATIVE_INFINITY
      let lastRelease = 0
      let waiting = 0
      const startedAt = yield* Clock.currentTimeMillis

      const publish = (rows: ReadonlyArray<DueAttempt>) =>
        nats.publishAll(
          rows.map((row) => ({
            subject: nats.subject(attemptSubject(row.endpoint_id)),
            data: encodeAttempt(row),
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
        attemptsWaiting: (count) => {
          waiting = count
        },
      })
    }),
  )
}

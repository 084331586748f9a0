import { Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { pruneDeadLetters } from "../platform/DeadLetters.ts"
import { WebhookConfig } from "../webhooks/Config.ts"
import { PortalRetention } from "../portal/Retention.ts"
import { WebhookRetention } from "../webhooks/Retention.ts"
import { RetentionRepo } from "./RetentionRepo.ts"
import { ABSOLUTE_TIMEOUT_MS, FAILURE_WINDOW_MS } from "./Sessions.ts"

/** Rows one statement of the sweep deletes at most: a batch's row locks are held for one short statement. */
export const SWEEP_BATCH = 1000

/**
 * After each batch the sweep rests this many times as long as the batch took, so it takes at most a quarter of
 * the database's and the disk's time from the delivery engine, and less the busier the database is.
 */
const REST_PER_WORK = 3

const DAY_MS = 86_400_000

/** Portal sessions are kept a day past their expiry, for support to see a partner's recent sessions. */
const PORTAL_SESSION_KEPT_MS = DAY_MS

/** What one sweep deleted, by kind. */
export interface Pruned {
  readonly deliveries: number
  readonly bulk_retry_rows: number
  readonly replay_rows: number
  readonly dead_letters: number
  readonly operator_sessions: number
  readonly sign_in_failures: number
  readonly portal_sessions: number
}

/**
 * Deletes what is past its retention: finished webhook deliveries with their attempts, finished bulk retries and
 * ended replays (`WEBHOOK_DELIVERY_RETENTION_DAYS` after creation, or after finishing for a job), dead letters
 * (`DEAD_LETTER_RETENTION_DAYS`), console sessions past their 12 hours, failed sign-ins outside the throttle's
 * window and portal sessions a day past their expiry, in batches with a rest after each (`REST_PER_WORK`). Each table's rows are deleted by the context that
 * owns it; the sweep says when. Deliveries still under way are kept until they end;
 * the audit log and policy documents are never deleted. Every process with the workers role sweeps; concurrent sweeps skip each other's rows.
 */
export class Retention extends Context.Service<Retention>()("partner-service/operator/Retention", {
  make: Effect.gen(function* () {
    const repo = yield* RetentionRepo
    const owned = yield* WebhookRetention
    const portal = yield* PortalRetention
    const db = yield* Db
    const config = yield* AppConfig
    const webhooks = yield* WebhookConfig

    /** Batches of `prune` until one deletes fewer than a batch, resting after each full one; how many rows went. */
    const drain = (batch: number, prune: (limit: number) => Effect.Effect<number>) =>
      Effect.gen(function* () {
        let total = 0
        while (true) {
          const [took, n] = yield* Effect.timed(prune(batch))
          total += n
          if (n < batch) return total
          yield* Effect.sleep(Duration.times(took, REST_PER_WORK))
        }
      })

    const sweep = Effect.fn("Retention.sweep")(function* (batch: number = SWEEP_BATCH) {
      const now = yield* Clock.currentTimeMillis
      const deliveriesBefore = new Date(now - webhooks.deliveryRetentionDays * DAY_MS)
      return {
        deliveries:
          (yield* drain(batch, (limit) => owned.pruneDeliveries("delivered", deliveriesBefore, limit))) +
          (yield* drain(batch, (limit) => owned.pruneDeliveries("failed", deliveriesBefore, limit))),
        bulk_retry_rows: yield* drain(batch, (limit) => owned.pruneBulkRetries(deliveriesBefore, limit)),
        replay_rows: yield* drain(batch, (limit) => owned.pruneReplays(deliveriesBefore, limit)),
        dead_letters: yield* drain(batch, (limit) =>
          pruneDeadLetters(db, new Date(now - config.retention.deadLetterDays * DAY_MS), limit),
        ),
        operator_sessions: yield* drain(batch, (limit) =>
          repo.pruneSessions(new Date(now - ABSOLUTE_TIMEOUT_MS), limit),
        ),
        sign_in_failures: yield* drain(batch, (limit) =>
          repo.pruneSignInFailures(new Date(now - FAILURE_WINDOW_MS), limit),
        ),
        portal_sessions: yield* drain(batch, (limit) =>
          portal.pruneSessions(new Date(now - PORTAL_SESSION_KEPT_MS), limit),
        ),
      } satisfies Pruned
    })

    return { sweep }
  }),
}) {
  static readonly layer = Layer.effect(Retention, Retention.make).pipe(
    Layer.provide([RetentionRepo.layer, WebhookRetention.layer, PortalRetention.layer]),
    Layer.provide(WebhookConfig.layer),
  )

  /**
   * The sweep in a worker process: at start, then every `RETENTION_SWEEP_SECONDS`. A failed sweep (Postgres
   * unavailable) is logged and tried again at the next period; the loop never ends but with its scope.
   */
  static readonly sweepLayer = Layer.effectDiscard(
    Effect.gen(function* () {
      const retention = yield* Retention
      const config = yield* AppConfig
      yield* Effect.forkScoped(
        retention.sweep().pipe(
          Effect.tap((pruned) =>
            Object.values(pruned).some((n) => n > 0)
              ? Effect.logInfo("retention sweep").pipe(Effect.annotateLogs({ ...pruned }))
              : Effect.void,
          ),
          Effect.catchCause((cause) =>
            Effect.logWarning("retention sweep failed; retried next period").pipe(
              Effect.annotateLogs({ cause: String(cause) }),
            ),
          ),
          Effect.repeat(Schedule.spaced(Duration.seconds(config.retention.sweepSeconds))),
        ),
      )
    }),
  )
}

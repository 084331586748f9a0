import { Clock, Context, Effect, Layer, Schedule } from "effect"
import { WebhookConfig } from "../webhooks/Config.ts"
import { DeliveryReads } from "../webhooks/endpoints/DeliveryReads.ts"
import {
  endpointHealth,
  lastDaySince,
  lastHourSince,
  lastHourSummaries,
} from "../webhooks/endpoints/HealthWindows.ts"
import { WebhookRetention } from "../webhooks/Retention.ts"
import type { HealthBucket } from "./Api.ts"

/**
 * An endpoint's health for the console: attempts, successes, failures and p50/p95 latency over the last hour
 * (12 buckets of 5 minutes) and the last day (24 of an hour), read from the aggregates the delivery engine keeps
 * as it records outcomes (`webhook_endpoint_health`), and the deliveries still waiting. Attempts whose outcome
 * is unknown (their process stopped mid-request) are not counted. The newest bucket that counted timeouts in a
 * row says whether the endpoint is slowed.
 */

export type { EndpointHealth, HealthSummary, HealthWindow } from "./Api.ts"
export type HealthBucketShown = HealthBucket

const HOUR_MS = 3_600_000
/** Buckets older than this are no longer shown and are deleted. */
const KEEP_MS = 25 * HOUR_MS

export class Health extends Context.Service<Health>()("partner-service/operator/Health", {
  make: Effect.gen(function* () {
    const reads = yield* DeliveryReads
    const config = yield* WebhookConfig
    const retention = yield* WebhookRetention

    const health = Effect.fn("Health.health")(function* (endpointId: number, now: Date) {
      const rows = yield* reads.healthBuckets(endpointId, lastDaySince(now))
      const waiting = yield* reads.waiting(endpointId)
      return endpointHealth(rows, waiting, now, config.maxInFlightPerEndpoint)
    })

    /** The last hour of each endpoint in `endpointIds` (a list's page), read at once. */
    const lastHour = Effect.fn("Health.lastHour")(function* (endpointIds: ReadonlyArray<number>, now: Date) {
      const rows = yield* reads.healthBucketsOf(endpointIds, lastHourSince(now))
      return lastHourSummaries(rows, endpointIds, now)
    })

    /** Has the webhooks context delete the buckets no window shows any more. */
    const prune = Effect.fn("Health.prune")(function* (now: Date) {
      yield* retention.pruneHealthBuckets(new Date(now.getTime() - KEEP_MS))
    })

    return { health, lastHour, prune }
  }),
}) {
  static readonly layer = Layer.effect(Health, Health.make).pipe(
    Layer.provide([WebhookConfig.layer, WebhookRetention.layer, DeliveryReads.layer]),
  )

  /** In the workers: old buckets deleted every ten minutes (every process may; the delete is idempotent). */
  static readonly pruneLayer = Layer.effectDiscard(
    Effect.gen(function* () {
      const health = yield* Health
      yield* Effect.forkScoped(
        Effect.gen(function* () {
          yield* health.prune(new Date(yield* Clock.currentTimeMillis))
        }).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("health bucket pruning failed").pipe(
              Effect.annotateLogs({ cause: String(cause) }),
            ),
          ),
          Effect.repeat(Schedule.spaced("10 minutes")),
        ),
      )
    }),
  )
}

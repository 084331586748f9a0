import { Effect } from "effect"
import { Db } from "../../platform/Db.ts"
import type { DeliveryStatus } from "../Domain.ts"
import { type AttemptKey, UNKNOWN_OUTCOME_REASON } from "./ClaimsRepo.ts"
import { healthBuckets } from "./HealthBuckets.ts"

export interface OutcomeInput extends AttemptKey {
  /** The delivery's endpoint, whose health aggregates count the attempt. */
  readonly endpointId: number
  readonly status: Extract<DeliveryStatus, "delivered" | "retrying" | "failed">
  /** The attempt due next (retrying) or this one. */
  readonly attemptNumber: number
  readonly nextRetryAt: Date | null
  readonly startedAt: Date
  readonly durationMs: number
  readonly statusCode: number | null
  readonly failureReason: string | null
  readonly responseBody: string | null
  /**
   * The endpoint's attempts timed out in a row after this one, as this process counts them (0 after an answer);
   * null when this outcome leaves the count as it was.
   */
  readonly timeoutsInRow: number | null
}

export const GONE_REASON = "Destination answered 410 Gone"

const int = (value: unknown) => Number(value)

/** The record of a batch of attempts' outcomes, with the endpoints' health buckets, and an endpoint's end on 410 Gone. */
export const makeOutcomesRepo = Effect.gen(function* () {
  const db = yield* Db

  const recordOutcomes = Effect.fn("DeliveryRepo.recordOutcomes")(function* (
    outcomes: ReadonlyArray<OutcomeInput>,
  ) {
    if (outcomes.length === 0) return []
    const column = <A>(pick: (o: OutcomeInput) => A) => outcomes.map(pick)
    const health = healthBuckets(outcomes)
    const rows = yield* db.query(
      (sql) => sql`
        with input as (
          select * from unnest(
            ${column((o) => o.deliveryId)}::bigint[], ${column((o) => o.series)}::int[],
            ${column((o) => o.attempt)}::int[], ${column((o) => o.status)}::text[],
            ${column((o) => o.attemptNumber)}::int[],
            ${column((o) => o.nextRetryAt?.toISOString() ?? null)}::timestamptz[],
            ${column((o) => o.startedAt.toISOString())}::timestamptz[], ${column((o) => o.durationMs)}::int[],
            ${column((o) => o.statusCode)}::int[], ${column((o) => o.failureReason)}::text[],
            ${column((o) => o.responseBody)}::text[])
            as i(id, series, attempt, status, attempt_number, next_retry_at, started_at, duration_ms, status_code,
                 failure_reason, response_body)
        ),
        updated as (
          update webhook_deliveries d set
            status = i.status,
            attempt_number = i.attempt_number,
            last_attempted_at = i.started_at,
            next_retry_at = i.next_retry_at,
            duration_ms = i.duration_ms,
            last_attempt_failure_reason = i.failure_reason,
            delivered_at = case when i.status = 'delivered' then now() else d.delivered_at end,
            lease_until = null,
            updated_at = now()
          from input i
          where d.id = i.id and d.series = i.series and d.attempt_number = i.attempt
            and d.lease_until is not null and d.status in ('pending', 'retrying', 'rate_limited')
          returning d.id
        ),
        recorded as (
          insert into webhook_attempts
            (delivery_id, series, attempt_number, started_at, status_code, duration_ms, failure_reason,
             response_body)
          select id, series, attempt, started_at, status_code, duration_ms, failure_reason, response_body
          from input order by id
          -- An attempt recorded with an unknown outcome (another process took its lease over) learns it.
          on conflict (delivery_id, series, attempt_number) do update set
            started_at = excluded.started_at, status_code = excluded.status_code,
            duration_ms = excluded.duration_ms, failure_reason = excluded.failure_reason,
            response_body = excluded.response_body
          where webhook_attempts.duration_ms is null
            and webhook_attempts.failure_reason = ${UNKNOWN_OUTCOME_REASON}
        ),
        -- The endpoints' health buckets, in key order so concurrent batches lock them in turn.
        health as (
          insert into webhook_endpoint_health as h (endpoint_id, bucket_start, attempts, succeeded, failed,
                                                    latency, timeouts_in_row)
          select endpoint_id, bucket_start, attempts, succeeded, failed, latency::int[], timeouts_in_row
          from unnest(${health.map((b) => b.endpointId)}::bigint[],
                      ${health.map((b) => new Date(b.bucketStart).toISOString())}::timestamptz[],
                      ${health.map((b) => b.attempts)}::int[], ${health.map((b) => b.succeeded)}::int[],
                      ${health.map((b) => b.failed)}::int[], ${health.map((b) => `{${b.latency.join(",")}}`)}::text[],
                      ${health.map((b) => b.timeoutsInRow)}::int[])
            as b(endpoint_id, bucket_start, attempts, succeeded, failed, latency, timeouts_in_row)
          order by endpoint_id, bucket_start
          on conflict (endpoint_id, bucket_start) do update set
            -- The last count any process recorded: each process counts the endpoint's timeouts on its own.
            timeouts_in_row = coalesce(excluded.timeouts_in_row, h.timeouts_in_row),
            attempts = h.attempts + excluded.attempts,
            succeeded = h.succeeded + excluded.succeeded,
            failed = h.failed + excluded.failed,
            latency = (select array_agg(x.a + x.b order by x.n)
                       from unnest(h.latency, excluded.latency) with ordinality as x(a, b, n))
        )
        select id from updated`,
    )
    const updated = new Set(rows.map((r) => int(r.id)))
    return outcomes.map((o) => updated.has(o.deliveryId))
  })

  const disableGone = Effect.fn("DeliveryRepo.disableGone")(function* (
    endpointId: number,
    exceptDelivery: number,
  ) {
    const rows = yield* db.query(
      (sql) => sql`
        with endpoint as (
          update webhook_endpoints set status = 'disabled', suspension_reason = ${GONE_REASON},
            updated_at = now()
          where id = ${endpointId} and deleted_at is null
        )
        update webhook_deliveries set status = 'failed', next_retry_at = null, lease_until = null,
          held_since = null, last_attempt_failure_reason = ${GONE_REASON}, updated_at = now()
        where endpoint_id = ${endpointId} and id <> ${exceptDelivery}
          and status in ('pending', 'retrying', 'rate_limited')
        returning id`,
    )
    return rows.map((r) => int(r.id))
  })

  return { recordOutcomes, disableGone }
})

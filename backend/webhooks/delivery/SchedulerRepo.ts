import { Context, Effect, Layer } from "effect"
import { Db } from "../../platform/Db.ts"

/**
 * The retry scheduler's SQL: due attempts published and marked in one transaction, the next due time, and the
 * release of deliveries held for a suspended endpoint.
 */

export interface DueAttempt {
  readonly id: number
  readonly endpoint_id: number
  readonly series: number
  readonly attempt_number: number
  /** The trace context of the event it was routed from (only while traces are exported). */
  readonly traceparent: string | null
}

/**
 * A row due but already published is published again only after this long without an outcome: its message was
 * lost, or went with the process that claimed it (JetStream hands an unacked message on long before this).
 */
const REDISPATCH_AFTER = "5 minutes"

const int = (value: unknown) => Number(value)

export class SchedulerRepo extends Context.Service<
  SchedulerRepo,
  {
    /** Publishes due attempts, and those of deliveries announced before `unclaimedBefore` and never claimed. */
    readonly dispatchDue: (
      now: Date,
      unclaimedBefore: Date,
      limit: number,
      publish: (rows: ReadonlyArray<DueAttempt>) => Effect.Effect<void>,
    ) => Effect.Effect<number>
    /** The earliest scheduled time after `now`, if any. */
    readonly nextDue: (now: Date) => Effect.Effect<Date | undefined>
    /**
     * Held deliveries whose endpoint is no longer suspended become due now (an active endpoint gets them, a
     * disabled or deleted one fails them at the claim); how many.
     */
    readonly releaseHeld: (now: Date) => Effect.Effect<number>
  }
>()("partner-service/webhooks/SchedulerRepo") {
  static readonly layer = Layer.effect(
    SchedulerRepo,
    Effect.gen(function* () {
      const db = yield* Db

      const dispatchDue = Effect.fn("SchedulerRepo.dispatchDue")(function* (
        now: Date,
        unclaimedBefore: Date,
        limit: number,
        publish: (rows: ReadonlyArray<DueAttempt>) => Effect.Effect<void>,
      ) {
        // Published while the rows are locked, and marked in the same transaction: a failed publish rolls the
        // mark back, so the rows are found again; a claim of a row published here waits for the commit.
        return yield* db.transaction(
          Effect.gen(function* () {
            // Due attempts, and deliveries announced before `unclaimedBefore` that no claim holds (never claimed, or
            // claimed by a process that stopped): their message was lost. A held delivery waits for its endpoint.
            const rows = yield* db.query(
              (sql) => sql`
                select id, endpoint_id, series, attempt_number, traceparent from webhook_deliveries
                where (next_retry_at <= ${now} and next_retry_at is not null
                       and status in ('pending', 'retrying', 'rate_limited')
                       and (dispatched_at is null or dispatched_at < next_retry_at
                         or dispatched_at < ${now}::timestamptz - ${REDISPATCH_AFTER}::interval))
                   or (status = 'pending' and next_retry_at is null and dispatched_at < ${unclaimedBefore}
                       and held_since is null and (lease_until is null or lease_until <= ${now}))
                order by coalesce(next_retry_at, dispatched_at)
                limit ${limit}
                for update skip locked`,
            )
            if (rows.length === 0) return 0
            const due = rows.map((r): DueAttempt => ({
              id: int(r.id),
              endpoint_id: int(r.endpoint_id),
              series: int(r.series),
              attempt_number: int(r.attempt_number),
              traceparent: r.traceparent as string | null,
            }))
            yield* publish(due)
            yield* db.query(
              (sql) =>
                sql`update webhook_deliveries set dispatched_at = ${now} where id = any(${due.map((r) => r.id)})`,
            )
            return due.length
          }),
        )
      })

      const releaseHeld = Effect.fn("SchedulerRepo.releaseHeld")(function* (now: Date) {
        const rows = yield* db.query(
          (sql) => sql`
            update webhook_deliveries d set held_since = null, updated_at = now(),
              next_retry_at = case when d.status in ('pending', 'retrying', 'rate_limited') then ${now}
                                   else d.next_retry_at end
            from webhook_endpoints e
            where d.held_since is not null and e.id = d.endpoint_id
              and (e.status <> 'suspended' or e.deleted_at is not null)
            returning d.id`,
        )
        return rows.length
      })

      const nextDue = Effect.fn("SchedulerRepo.nextDue")(function* (now: Date) {
        const [row] = yield* db.query(
          (sql) => sql`
            select min(next_retry_at) as at from webhook_deliveries
            where next_retry_at > ${now} and next_retry_at is not null
              and status in ('pending', 'retrying', 'rate_limited')`,
        )
        const at = row?.at as Date | null | undefined
        return at ?? undefined
      })

      return SchedulerRepo.of({ dispatchDue, nextDue, releaseHeld })
    }),
  )
}

import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"

/**
 * The SQL of the retention sweep: each call deletes at most `limit` rows past their time, in one statement (its
 * own transaction), picked through an index on the age and skipping rows another transaction holds, so no lock is
 * held longer than one small batch. The audit log and policy documents have no call here: they are kept.
 */
export class RetentionRepo extends Context.Service<RetentionRepo>()(
  "partner-service/operator/RetentionRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const count = (rows: ReadonlyArray<{ readonly n: number }>) => rows[0]?.n ?? 0

      return {
        /**
         * Finished deliveries (`delivered`, `failed`) of `status` created before `before`, with their attempts: one
         * statement, so the attempts go with their delivery. Deliveries still under way are kept until they end.
         */
        pruneDeliveries: (status: "delivered" | "failed", before: Date, limit: number) =>
          db
            .query(
              (sql) => sql<Array<{ n: number }>>`
              with doomed as (
                select id from webhook_deliveries
                where status = ${status} and created_at < ${before}
                limit ${limit}
                for update skip locked
              ),
              attempts as (
                delete from webhook_attempts a using doomed where a.delivery_id = doomed.id
              ),
              deliveries as (
                delete from webhook_deliveries d using doomed where d.id = doomed.id returning 1
              )
              select count(*)::int as n from deliveries`,
            )
            .pipe(Effect.map(count)),

        /**
         * Up to `limit` items of the bulk retries that finished before `before` (a preview never started: created
         * before it); once none are left, up to `limit` of those jobs. How many rows went.
         */
        pruneBulkRetries: (before: Date, limit: number) =>
          Effect.gen(function* () {
            const items = yield* db
              .query(
                (sql) => sql<Array<{ n: number }>>`
                with gone as (
                  delete from bulk_retry_items where (bulk_retry_id, position) in (
                    select i.bulk_retry_id, i.position
                    from bulk_retries b join bulk_retry_items i on i.bulk_retry_id = b.id
                    where b.status <> 'running' and coalesce(b.finished_at, b.created_at) < ${before}
                    limit ${limit}
                  )
                  returning 1
                )
                select count(*)::int as n from gone`,
              )
              .pipe(Effect.map(count))
            if (items === limit) return items
            const jobs = yield* db
              .query(
                (sql) => sql<Array<{ n: number }>>`
                with gone as (
                  delete from bulk_retries where id in (
                    select id from bulk_retries j
                    where j.status <> 'running' and coalesce(j.finished_at, j.created_at) < ${before}
                      and not exists (select 1 from bulk_retry_items i where i.bulk_retry_id = j.id)
                    limit ${limit}
                  )
                  returning 1
                )
                select count(*)::int as n from gone`,
              )
              .pipe(Effect.map(count))
            return items + jobs
          }),

        pruneDeadLetters: (before: Date, limit: number) =>
          db
            .query(
              (sql) => sql<Array<{ n: number }>>`
              with gone as (
                delete from dead_letters where id in (
                  select id from dead_letters where created_at < ${before} limit ${limit}
                )
                returning 1
              )
              select count(*)::int as n from gone`,
            )
            .pipe(Effect.map(count)),

        /** Sessions signed in before `before`: past their absolute lifetime, so ended whatever else happened. */
        pruneSessions: (before: Date, limit: number) =>
          db
            .query(
              (sql) => sql<Array<{ n: number }>>`
              with gone as (
                delete from operator_sessions where id in (
                  select id from operator_sessions where created_at < ${before} limit ${limit}
                )
                returning 1
              )
              select count(*)::int as n from gone`,
            )
            .pipe(Effect.map(count)),

        /** Failed sign-ins at or before `before`: outside the throttle's window, so counted by nothing. */
        pruneSignInFailures: (before: Date, limit: number) =>
          db
            .query(
              (sql) => sql<Array<{ n: number }>>`
              with gone as (
                delete from operator_sign_in_failures where ctid = any(array(
                  select ctid from operator_sign_in_failures where failed_at <= ${before} limit ${limit}
                ))
                returning 1
              )
              select count(*)::int as n from gone`,
            )
            .pipe(Effect.map(count)),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(RetentionRepo, RetentionRepo.make)
}

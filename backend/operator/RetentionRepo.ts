import { Context, Effect, Layer } from "effect"
import { Db, type Sql } from "../platform/Db.ts"

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

      /** Runs `deletion` (a `delete ... returning 1`) and tells how many rows it deleted. */
      const deleted = (deletion: (sql: Sql) => ReturnType<Sql>) =>
        db
          .query(
            (sql) => sql<Array<{ n: number }>>`
            with gone as (${deletion(sql)})
            select count(*)::int as n from gone`,
          )
          .pipe(Effect.map(count))

      /** Up to `limit` rows of `table` whose `column` is before `before`. */
      const pruneOlder = (table: string, column: string, before: Date, limit: number) =>
        deleted(
          (sql) => sql`
            delete from ${sql(table)} where id in (
              select id from ${sql(table)} where ${sql(column)} < ${before} limit ${limit}
            )
            returning 1`,
        )

      /**
       * Up to `limit` items of the jobs `ended` picks; once none are left, up to `limit` of those jobs, so no
       * statement deletes more than a batch however many items a job has. How many rows went.
       */
      const pruneJobs = (
        names: { readonly table: string; readonly items: string; readonly key: string },
        ended: (sql: Sql) => ReturnType<Sql>,
        limit: number,
      ) =>
        Effect.gen(function* () {
          const items = yield* deleted(
            (sql) => sql`
              delete from ${sql(names.items)} where ctid = any(array(
                select i.ctid from ${sql(names.table)} j join ${sql(names.items)} i on i.${sql(names.key)} = j.id
                where ${ended(sql)}
                limit ${limit}
              ))
              returning 1`,
          )
          if (items === limit) return items
          const jobs = yield* deleted(
            (sql) => sql`
              delete from ${sql(names.table)} where id in (
                select id from ${sql(names.table)} j
                where ${ended(sql)}
                  and not exists (select 1 from ${sql(names.items)} i where i.${sql(names.key)} = j.id)
                limit ${limit}
              )
              returning 1`,
          )
          return items + jobs
        })

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
          pruneJobs(
            { table: "bulk_retries", items: "bulk_retry_items", key: "bulk_retry_id" },
            (sql) => sql`status <> 'running' and coalesce(finished_at, created_at) < ${before}`,
            limit,
          ),

        /**
         * The same for replays that ended (completed or canceled) before `before`, with the event bodies they
         * copied from the stream.
         */
        pruneReplays: (before: Date, limit: number) =>
          pruneJobs(
            { table: "webhook_replays", items: "webhook_replay_events", key: "replay_id" },
            (sql) => sql`status <> 'running' and ended_at < ${before}`,
            limit,
          ),

        pruneDeadLetters: (before: Date, limit: number) =>
          pruneOlder("dead_letters", "created_at", before, limit),

        /** Sessions signed in before `before`: past their absolute lifetime, so ended whatever else happened. */
        pruneSessions: (before: Date, limit: number) =>
          pruneOlder("operator_sessions", "created_at", before, limit),

        /** Failed sign-ins at or before `before`: outside the throttle's window, so counted by nothing. */
        pruneSignInFailures: (before: Date, limit: number) =>
          deleted(
            (sql) => sql`
              delete from operator_sign_in_failures where ctid = any(array(
                select ctid from operator_sign_in_failures where failed_at <= ${before} limit ${limit}
              ))
              returning 1`,
          ),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(RetentionRepo, RetentionRepo.make)
}

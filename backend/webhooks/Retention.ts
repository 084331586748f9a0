import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { pruneJobs } from "../platform/Prune.ts"

/**
 * What the webhooks context lets the retention sweep delete of its rows, each call at most `limit` rows in one
 * statement (`platform/Prune.ts`): finished deliveries with their attempts, ended replays with the events they
 * copied, finished bulk retries with their snapshots, and health buckets no window shows. The operator's sweep decides when; only this context deletes.
 */
export class WebhookRetention extends Context.Service<WebhookRetention>()(
  "partner-service/webhooks/WebhookRetention",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        /**
         * Finished deliveries (`delivered`, `failed`) of `status` created before `before`, with their attempts:
         * one statement, so the attempts go with their delivery. Deliveries still under way are kept until they end.
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
            .pipe(Effect.map(([row]) => row?.n ?? 0)),

        /**
         * Up to `limit` copied events of the replays that ended (completed or canceled) before `before`; once
         * none are left, up to `limit` of those replays.
         */
        pruneReplays: (before: Date, limit: number) =>
          pruneJobs(
            db,
            { table: "webhook_replays", items: "webhook_replay_events", key: "replay_id" },
            (sql) => sql`status <> 'running' and ended_at < ${before}`,
            limit,
          ),

        /**
         * Up to `limit` items of the bulk retries that finished before `before` (a preview never started: created
         * before it); once none are left, up to `limit` of those jobs. How many rows went.
         */
        pruneBulkRetries: (before: Date, limit: number) =>
          pruneJobs(
            db,
            { table: "bulk_retries", items: "bulk_retry_items", key: "bulk_retry_id" },
            (sql) => sql`status <> 'running' and coalesce(finished_at, created_at) < ${before}`,
            limit,
          ),

        /** The endpoints' health buckets that started before `before`. */
        pruneHealthBuckets: (before: Date) =>
          db
            .query((sql) => sql`delete from webhook_endpoint_health where bucket_start < ${before}`)
            .pipe(Effect.asVoid),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(WebhookRetention, WebhookRetention.make)
}

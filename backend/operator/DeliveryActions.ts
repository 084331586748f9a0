import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { DeliveryNotFound } from "../webhooks/Domain.ts"
import { recordAudit } from "../audit/Audit.ts"
import { BulkRetries, DEFAULT_RATE } from "../webhooks/bulk/BulkRetries.ts"
import { Deliveries } from "./DeliveryQueries.ts"

/** What an operator does to deliveries, audited (in the change's transaction where it has one). */
export class DeliveryActions extends Context.Service<DeliveryActions>()(
  "partner-service/operator/DeliveryActions",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const deliveries = yield* Deliveries
      const bulkRetries = yield* BulkRetries

      /** The partner API's retry by delivery id alone: a new series from attempt 1, the same delivery. */
      const retry = Effect.fn("DeliveryActions.retry")(function* (id: string, actor: string) {
        return yield* db.transaction(
          Effect.gen(function* () {
            const [before] = /^\d{1,15}$/.test(id) ? (yield* deliveries.list({ id })).deliveries : []
            if (before === undefined) return yield* new DeliveryNotFound()
            const after = yield* deliveries.retry(id)
            yield* recordAudit(db, {
              actor,
              action: "deliveries.retry",
              target: `delivery:${after.id}`,
              before: { status: before.status, attempt_number: before.attempt_number },
              after: { status: after.status, attempt_number: after.attempt_number },
            })
            return after
          }),
        )
      })

      /** Records a bulk retry's creation with the filter, the rate and how many deliveries it retries. */
      const audited = <J extends { id: number; filter: unknown; total: number; status: string }>(
        job: J,
        rate: unknown,
        actor: string,
      ) =>
        recordAudit(db, {
          actor,
          action: "bulk_retries.create",
          target: `bulk_retry:${job.id}`,
          after: {
            filter: job.filter,
            rate_per_second: rate ?? DEFAULT_RATE,
            total: job.total,
            status: job.status,
          },
        }).pipe(Effect.as(job))

      /**
       * A bulk retry job; audited once it exists (taking its snapshot spans several transactions of its own), with
       * the filter, the rate and how many deliveries it will retry.
       */
      const createBulkRetry = Effect.fn("DeliveryActions.createBulkRetry")(function* (
        filter: unknown,
        rate: unknown,
        actor: string,
      ) {
        return yield* audited(yield* bulkRetries.create(filter, rate, actor), rate, actor)
      })

      /** A bulk retry's preview: the snapshot taken, nothing retried (so nothing is audited until it starts). */
      const previewBulkRetry = Effect.fn("DeliveryActions.previewBulkRetry")(function* (
        filter: unknown,
        actor: string,
      ) {
        return yield* bulkRetries.create(filter, undefined, actor, true)
      })

      /** Starts a preview; audited as a bulk retry's creation, with the total it retries. */
      const startBulkRetry = Effect.fn("DeliveryActions.startBulkRetry")(function* (
        id: string,
        rate: unknown,
        actor: string,
      ) {
        return yield* audited(yield* bulkRetries.start(id, rate, actor), rate, actor)
      })

      /** Cancels a running job; one already finished is answered unchanged and nothing is recorded. */
      const cancelBulkRetry = Effect.fn("DeliveryActions.cancelBulkRetry")(function* (
        id: string,
        actor: string,
      ) {
        const before = yield* bulkRetries.get(id)
        const after = yield* bulkRetries.cancel(id)
        if (after.status !== before.status) {
          yield* recordAudit(db, {
            actor,
            action: "bulk_retries.cancel",
            target: `bulk_retry:${after.id}`,
            before: { status: before.status, done: before.done, total: before.total },
            after: { status: after.status, done: after.done, total: after.total },
          })
        }
        return after
      })

      return { retry, createBulkRetry, previewBulkRetry, startBulkRetry, cancelBulkRetry }
    }),
  },
) {
  static readonly layer = Layer.effect(DeliveryActions, DeliveryActions.make)
}

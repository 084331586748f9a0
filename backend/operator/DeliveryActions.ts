import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { DeliveryNotFound } from "../webhooks/Domain.ts"
import { recordAudit } from "./Audit.ts"
import { Deliveries } from "./DeliveryQueries.ts"

/** What an operator does to one delivery, audited in the change's transaction. */
export class DeliveryActions extends Context.Service<DeliveryActions>()(
  "partner-service/operator/DeliveryActions",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const deliveries = yield* Deliveries

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

      return { retry }
    }),
  },
) {
  static readonly layer = Layer.effect(DeliveryActions, DeliveryActions.make)
}

import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { countDeleted, pruneOlder } from "../platform/Prune.ts"

/**
 * What the retention sweep deletes of the operator context's own rows, at most `limit` rows a statement
 * (`platform/Prune.ts`): ended sessions and old failed sign-ins. Webhooks' rows (bulk retries among them) and dead
 * letters are deleted by their owners (`webhooks/Retention.ts`, `platform/DeadLetters.ts`).
 */
export class RetentionRepo extends Context.Service<RetentionRepo>()(
  "partner-service/operator/RetentionRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        /** Sessions signed in before `before`: past their absolute lifetime, so ended whatever else happened. */
        pruneSessions: (before: Date, limit: number) =>
          pruneOlder(db, "operator_sessions", "created_at", before, limit),

        /** Failed sign-ins at or before `before`: outside the throttle's window, so counted by nothing. */
        pruneSignInFailures: (before: Date, limit: number) =>
          countDeleted(
            db,
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

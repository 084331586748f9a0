import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"

/**
 * What the enrollment context lets the console read of a renter's journey: where the prospect's enrollment
 * stands.
 */
export class EnrollmentReads extends Context.Service<EnrollmentReads>()(
  "partner-service/enrollment/EnrollmentReads",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        enrollment: (prospectId: string) =>
          db
            .query(
              (sql) => sql<
                Array<{
                  details_confirmed_at: Date | null
                  inputs_supplied_at: Date | null
                  blocked_reason: string | null
                  created_at: Date
                }>
              >`
          select details_confirmed_at, inputs_supplied_at, blocked_reason, created_at
          from enrollments where prospect_id = ${prospectId}::bigint`,
            )
            .pipe(Effect.map(([row]) => row)),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(EnrollmentReads, EnrollmentReads.make)
}

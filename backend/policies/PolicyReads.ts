import { Context, Effect, Layer } from "effect"
import type { FoundRow } from "../contract/Search.ts"
import { Db } from "../platform/Db.ts"

/**
 * What the policies context lets the console read of a prospect's applications and policies, and the policy a
 * search names by its number. The rows are this context's; readers take these types as they are.
 */
export class PolicyReads extends Context.Service<PolicyReads>()("partner-service/policies/PolicyReads", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      applications: (prospectId: string) =>
        db.query(
          (sql) => sql<
            Array<{
              id: number
              status: string
              outcome: string | null
              product_type: string | null
              cadence: string | null
              coverage_amount_cents: number | null
              premium_cents: number | null
              declined_rules: Array<string> | null
              submitted_at: Date | null
              created_at: Date
            }>
          >`
        select id::int, status, outcome, product_type, cadence, coverage_amount_cents::float8 as coverage_amount_cents,
          premium_cents::float8 as premium_cents, declined_rules, submitted_at, created_at
        from policy_applications where prospect_id = ${prospectId}::bigint order by id`,
        ),
      /**
       * Every payment attempt of the prospect's applications, oldest first: declined ones with the processor's
       * reason, and the card tried (`charges_application`).
       */
      payments: (prospectId: string) =>
        db.query(
          (sql) => sql<
            Array<{
              id: number
              application_id: number
              kind: string
              amount_cents: number
              status: string
              failure_reason: string | null
              card_brand: string | null
              card_last4: string
              created_at: Date
            }>
          >`
        select c.id::int, c.application_id::int, c.kind, c.amount_cents::float8 as amount_cents, c.status,
          c.failure_reason, m.brand as card_brand, m.last4 as card_last4, c.created_at
        from policy_applications a
        join charges c on c.application_id = a.id
        join payment_methods m on m.id = c.payment_method_id
        where a.prospect_id = ${prospectId}::bigint
        order by c.created_at, c.id`,
        ),
      policies: (prospectId: string) =>
        db.query(
          (sql) => sql<
            Array<{
              id: string
              policy_number: string
              status: string
              product_type: string
              coverage_amount_cents: number
              coverage_start_date: string
              coverage_end_date: string
            }>
          >`
        select 'policy_' || id as id, policy_number, status, product_type,
          coverage_amount_cents::float8 as coverage_amount_cents,
          coverage_start_date::text, coverage_end_date::text
        from policies where prospect_id = ${prospectId}::bigint order by id`,
        ),
      findPolicy: (policyNumber: string) =>
        db.query(
          (sql) => sql<Array<FoundRow>>`
        select 'policy_' || id as id, policy_number as label,
          concat_ws(' · ', insured_name, product_type, status) as detail
        from policies where policy_number = upper(${policyNumber})`,
        ),
    }
  }),
}) {
  static readonly layer = Layer.effect(PolicyReads, PolicyReads.make)
}

import { Effect } from "effect"
import { Db, type Sql } from "../platform/Db.ts"
import { isoText } from "./LifecycleSql.ts"

/** A delinquency with what its payload carries of its policy. */
export interface DelinquencyRow {
  readonly id: string
  readonly policy_id: string
  readonly status: "active" | "resolved"
  readonly amount_cents: string
  readonly missed_installments: Array<number>
  readonly resolved_amount_cents: string | null
  readonly resolution: "charge" | "operator" | null
  readonly policy_number: string
  readonly property_id: string | null
  readonly owner_slug: string
  readonly pms_property_id: string | null
  readonly pms_unit_id: string | null
  readonly pms_resident_id: string | null
  readonly source_prospect_id: string | null
  /** ISO 8601 UTC */
  readonly created_at: string
  readonly resolved_at: string | null
}

const DELINQUENCY_COLUMNS = (sql: Sql) => sql`
  d.id::text, d.policy_id::text, d.status, d.amount_cents::text, d.missed_installments,
  d.resolved_amount_cents::text, d.resolution, p.policy_number, p.property_id::text, o.slug as owner_slug,
  p.pms_property_id, p.pms_unit_id, p.pms_resident_id, p.source_prospect_id,
  ${isoText(sql, "d.created_at")} as created_at, ${isoText(sql, "d.resolved_at")} as resolved_at`

/** The SQL of a policy's delinquencies. */
export const makeDelinquenciesRepo = Effect.gen(function* () {
  const db = yield* Db
  return {
    activeDelinquencyOf: (policyId: string) =>
      db
        .query(
          (sql) => sql<Array<{ id: string; amount_cents: string }>>`
          select id::text, amount_cents::text from delinquencies
          where policy_id = ${policyId} and status = 'active' for update`,
        )
        .pipe(Effect.map((rows) => rows[0])),
    openDelinquency: (policyId: string, amountCents: number, installment: number) =>
      db
        .query(
          (sql) => sql<Array<{ id: string }>>`
          insert into delinquencies (policy_id, amount_cents, missed_installments)
          values (${policyId}, ${amountCents}, ${sql.array([installment])}::int[])
          returning id::text`,
        )
        .pipe(Effect.map((rows) => rows[0]!.id)),
    /** Another missed premium adds to the active delinquency. */
    growDelinquency: (id: string, amountCents: number, installment: number) =>
      db.query(
        (sql) => sql`
        update delinquencies
        set amount_cents = amount_cents + ${amountCents},
            missed_installments = missed_installments || ${installment}::int, updated_at = now()
        where id = ${id}`,
      ),
    /** Resolves an active delinquency; false when it was not active. */
    resolveDelinquency: (id: string, resolution: "charge" | "operator", at: Date) =>
      db
        .query(
          (sql) => sql`
          update delinquencies
          set status = 'resolved', resolved_amount_cents = amount_cents, amount_cents = 0,
              resolution = ${resolution}, resolved_at = ${at}, updated_at = now()
          where id = ${id} and status = 'active'
          returning id`,
        )
        .pipe(Effect.map((rows) => rows.length > 0)),
    lockDelinquency: (id: string) =>
      db.query((sql) => sql`select id from delinquencies where id = ${id} for update`),
    delinquency: (id: string) =>
      db
        .query(
          (sql) => sql<Array<DelinquencyRow>>`
          select ${DELINQUENCY_COLUMNS(sql)}
          from delinquencies d join policies p on p.id = d.policy_id join owners o on o.id = p.owner_id
          where d.id = ${id}`,
        )
        .pipe(Effect.map((rows) => rows[0])),
    delinquenciesOf: (policyId: string) =>
      db.query(
        (sql) => sql<Array<DelinquencyRow>>`
        select ${DELINQUENCY_COLUMNS(sql)}
        from delinquencies d join policies p on p.id = d.policy_id join owners o on o.id = p.owner_id
        where d.policy_id = ${policyId} order by d.id`,
      ),
  }
})

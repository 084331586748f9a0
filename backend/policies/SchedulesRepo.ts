import { Effect } from "effect"
import { Db } from "../platform/Db.ts"
import { clockOf } from "./LifecycleSql.ts"

const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id)

/** The lifecycle job's SQL: policies that start or end on their owner's date, and the premiums that fall due. */
export const makeSchedulesRepo = Effect.gen(function* () {
  const db = yield* Db
  return {
    /** Upcoming policies whose coverage has started on their owner's date become active; their ids. */
    activateDue: (today: string, clocks: boolean, limit: number) =>
      db
        .query((sql) => {
          const clock = clockOf(sql, today, clocks)
          return sql<Array<{ id: string }>>`
          with due as (
            select p.id from policies p ${clock.join}
            where p.status = 'upcoming' and p.coverage_start_date <= ${clock.latest}
              and p.coverage_start_date <= ${clock.ownerToday} and p.coverage_end_date >= ${clock.ownerToday}
            order by p.coverage_start_date, p.id
            limit ${limit}
            for update of p skip locked
          )
          update policies set status = 'active', updated_at = now()
          from due where policies.id = due.id
          returning policies.id::text`
        })
        .pipe(Effect.map(ids)),
    /** Policies in force whose coverage ended before their owner's date become expired; their ids. */
    expireDue: (today: string, clocks: boolean, at: Date, limit: number) =>
      db
        .query((sql) => {
          const clock = clockOf(sql, today, clocks)
          return sql<Array<{ id: string }>>`
          with due as (
            select p.id from policies p ${clock.join}
            where p.status in ('active', 'upcoming', 'pending') and p.coverage_end_date < ${clock.latest}
              and p.coverage_end_date < ${clock.ownerToday}
            order by p.coverage_end_date, p.id
            limit ${limit}
            for update of p skip locked
          )
          update policies set status = 'expired', expired_at = ${at}, next_charge_on = null, updated_at = now()
          from due where policies.id = due.id and policies.status in ('active', 'upcoming', 'pending')
          returning policies.id::text`
        })
        .pipe(Effect.map(ids)),
    /**
     * The monthly policy whose premium has been due longest on its owner's date, locked (one another process
     * holds is skipped), with that date; undefined when none is due. `skip`: policies this pass gave up on.
     */
    lockNextDueCharge: (today: string, clocks: boolean, skip: ReadonlyArray<string>) =>
      db
        .query((sql) => {
          const clock = clockOf(sql, today, clocks)
          return sql<Array<{ id: string; today: string }>>`
          select p.id::text, to_char(${clock.ownerToday}, 'YYYY-MM-DD') as today
          from policies p ${clock.join}
          where p.next_charge_on <= ${clock.latest} and p.next_charge_on <= ${clock.ownerToday}
            and p.status in ('active', 'upcoming', 'pending')
            and p.id <> all(${sql.array([...skip])}::bigint[])
          order by p.next_charge_on, p.id
          limit 1
          for update of p skip locked`
        })
        .pipe(Effect.map((rows) => rows[0])),
    recordInstallment: (charge: {
      readonly policy_id: string
      readonly payment_method_id: string
      readonly installment: number
      readonly amount_cents: number
      readonly status: "succeeded" | "declined"
      readonly provider_reference: string | null
      readonly failure_reason: string | null
      readonly idempotency_key: string
    }) => db.query((sql) => sql`insert into charges ${sql({ ...charge, kind: "monthly" } as never)}`),
    advanceSchedule: (id: string, installmentsBilled: number, nextChargeOn: string | null) =>
      db.query(
        (sql) => sql`
        update policies
        set installments_billed = ${installmentsBilled}, next_charge_on = ${nextChargeOn}::date,
            updated_at = now()
        where id = ${id}`,
      ),
  }
})

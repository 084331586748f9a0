import { Context, Effect, Layer } from "effect"
import { Db, type Sql } from "../platform/Db.ts"
import { type AuditEntry, recordAudit } from "../audit/Audit.ts"

/** NOTIFY channel that wakes the lifecycle job in every worker (a test clock advance, a revision). */
export const LIFECYCLE_CHANNEL = "policy_lifecycle"

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

export interface MoveOutRow {
  readonly id: string
  readonly owner_id: string
  readonly external_id: string
  readonly policy_id: string
  readonly policy_number: string
  readonly property_id: string | null
  readonly move_out_date: string
  readonly status: "initiated"
  readonly created_at: string
  readonly updated_at: string
}

/** A unit a revision may move a policy to, with what the documents say of its building. */
export interface UnitCandidate {
  readonly unit_id: string
  readonly unit_name: string
  readonly pms_unit_id: string | null
  readonly property_id: string
  readonly property_external_id: string | null
  readonly premises: string
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly policy_holder_name: string
}

/** The columns a revision writes. */
export interface RevisionWrite {
  readonly status: string
  readonly coverage_amount_cents: string
  readonly coverage_start_date: string
  readonly coverage_end_date: string
  readonly unit_id: string | null
  readonly property_id: string | null
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly pms_unit_id: string | null
  readonly premises: string
  readonly unit_name: string
  readonly policy_holder_name: string
  readonly next_charge_on: string | null
  readonly canceled_at: Date | null
}

/** A timestamp column as Postgres writes it in UTC, to the second (`2026-01-02T03:04:05Z`). */
const isoText = (sql: Sql, column: string) =>
  sql`to_char(${sql.unsafe(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`

const DELINQUENCY_COLUMNS = (sql: Sql) => sql`
  d.id::text, d.policy_id::text, d.status, d.amount_cents::text, d.missed_installments,
  d.resolved_amount_cents::text, d.resolution, p.policy_number, p.property_id::text, o.slug as owner_slug,
  p.pms_property_id, p.pms_unit_id, p.pms_resident_id, p.source_prospect_id,
  ${isoText(sql, "d.created_at")} as created_at, ${isoText(sql, "d.resolved_at")} as resolved_at`

const MOVE_OUT_COLUMNS = (sql: Sql) => sql`
  m.id::text, m.owner_id::text, m.external_id, m.policy_id::text, p.policy_number, p.property_id::text,
  to_char(m.move_out_date, 'YYYY-MM-DD') as move_out_date, m.status,
  ${isoText(sql, "m.created_at")} as created_at, ${isoText(sql, "m.updated_at")} as updated_at`

/**
 * Where the lifecycle job reads "today" for each policy: the real date, plus the owner's test clock offset when
 * test clocks are honoured (never in production). `soonest` is the latest date any owner is on, a bound the
 * indexes can use before the per-owner comparison.
 */
const clockOf = (sql: Sql, today: string, clocks: boolean) => ({
  join: clocks ? sql`left join test_clocks tc on tc.owner_id = p.owner_id` : sql``,
  ownerToday: clocks ? sql`(${today}::date + coalesce(tc.offset_days, 0))` : sql`${today}::date`,
  latest: clocks
    ? sql`(${today}::date + (select coalesce(max(offset_days), 0) from test_clocks))`
    : sql`${today}::date`,
})

export class LifecycleRepo extends Context.Service<LifecycleRepo>()(
  "partner-service/policies/LifecycleRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id)

      return {
        ownerBySlug: (slug: string) =>
          db
            .query(
              (sql) => sql<Array<{ id: string; slug: string; max_coverage_amount_cents: string | null }>>`
              select id::text, slug, max_coverage_amount_cents::text from owners where slug = ${slug}`,
            )
            .pipe(Effect.map((rows) => rows[0])),
        ownerOf: (ownerId: string) =>
          db
            .query(
              (sql) => sql<Array<{ id: string; slug: string; max_coverage_amount_cents: string | null }>>`
              select id::text, slug, max_coverage_amount_cents::text from owners where id = ${ownerId}`,
            )
            .pipe(Effect.map((rows) => rows[0]!)),

        /** Wakes the lifecycle job of every worker once the caller's transaction commits. */
        wakeLifecycle: db.query((sql) => sql`select pg_notify(${LIFECYCLE_CHANNEL}, '')`),

        clockOffset: (ownerId: string) =>
          db
            .query(
              (sql) => sql<Array<{ offset_days: number }>>`
              select offset_days from test_clocks where owner_id = ${ownerId}`,
            )
            .pipe(Effect.map((rows) => rows[0]?.offset_days ?? 0)),
        /** Moves the owner's clock `days` further ahead; the new offset, or undefined past `maxOffset`. */
        advanceClock: (ownerId: string, days: number, maxOffset: number) =>
          db
            .query(
              (sql) => sql<Array<{ offset_days: number }>>`
              insert into test_clocks (owner_id, offset_days) values (${ownerId}, ${days})
              on conflict (owner_id) do update
                set offset_days = test_clocks.offset_days + excluded.offset_days, updated_at = now()
                where test_clocks.offset_days + excluded.offset_days <= ${maxOffset}
              returning offset_days`,
            )
            .pipe(Effect.map((rows) => rows[0]?.offset_days)),

        policyIdByNumber: (policyNumber: string) =>
          db
            .query(
              (sql) => sql<Array<{ id: string }>>`
              select id::text from policies where policy_number = ${policyNumber}`,
            )
            .pipe(Effect.map((rows) => rows[0]?.id)),
        /**
         * The policy's lifecycle columns, under its row lock (held until the transaction ends; the job skips a
         * policy while it is held) when `lock`.
         */
        lifecycleOf: (id: string, lock: boolean) =>
          db
            .query(
              (sql) => sql<Array<{ installments_billed: number; cancellation_reason: string | null }>>`
              select installments_billed, cancellation_reason from policies where id = ${id}
              ${lock ? sql`for update` : sql``}`,
            )
            .pipe(Effect.map((rows) => rows[0]!)),
        unitCandidates: (ownerId: string, unitExternalId: string, propertyExternalId: string | undefined) =>
          db.query(
            (sql) => sql<Array<UnitCandidate>>`
            select u.id::text as unit_id, u.name as unit_name, u.pms_unit_id, pr.id::text as property_id,
                   pr.external_system_id as property_external_id,
                   pr.street || ', ' || pr.city || ', ' || pr.state || ' ' || pr.zip as premises,
                   pr.pms_type, pr.pms_property_id,
                   coalesce(pr.policy_holder_name, o.name || ', LLC') as policy_holder_name
            from units u
            join properties pr on pr.id = u.property_id
            join owners o on o.id = pr.owner_id
            where pr.owner_id = ${ownerId} and u.external_system_id = ${unitExternalId}
              ${propertyExternalId === undefined ? sql`` : sql`and pr.external_system_id = ${propertyExternalId}`}
            order by pr.id`,
          ),
        applyRevision: (id: string, write: RevisionWrite) =>
          db.query(
            (sql) => sql`
            update policies set ${sql(write as never)}, updated_at = now() where id = ${id}`,
          ),
        cancel: (id: string, reason: string, at: Date) =>
          db.query(
            (sql) => sql`
            update policies
            set status = 'canceled', canceled_at = ${at}, cancellation_reason = ${reason}, next_charge_on = null,
                updated_at = now()
            where id = ${id}`,
          ),
        /** An operator's action, in the caller's transaction: it exists exactly when the change was committed. */
        audit: (entry: AuditEntry) => recordAudit(db, entry),

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

        /** A policy of this owner by its number (another owner's is no different from none). */
        policyOfOwner: (ownerId: string, policyNumber: string) =>
          db
            .query(
              (sql) => sql<Array<{ id: string }>>`
              select id::text from policies where owner_id = ${ownerId} and policy_number = ${policyNumber}`,
            )
            .pipe(Effect.map((rows) => rows[0]?.id)),
        /** Creates the move-out unless the owner has one with this `external_id`; the new id, if created. */
        insertMoveOut: (write: {
          readonly owner_id: string
          readonly external_id: string
          readonly policy_id: string
          readonly move_out_date: string
        }) =>
          db
            .query(
              (sql) => sql<Array<{ id: string }>>`
              insert into move_outs ${sql(write as never)}
              on conflict (owner_id, external_id) do nothing
              returning id::text`,
            )
            .pipe(Effect.map((rows) => rows[0]?.id)),
        /** The owner's move-out with this `external_id`, locked until the transaction ends. */
        lockMoveOut: (ownerId: string, externalId: string) =>
          db
            .query(
              (sql) => sql<Array<MoveOutRow>>`
              select ${MOVE_OUT_COLUMNS(sql)}
              from move_outs m join policies p on p.id = m.policy_id
              where m.owner_id = ${ownerId} and m.external_id = ${externalId}
              for update of m`,
            )
            .pipe(Effect.map((rows) => rows[0])),
        moveOut: (id: string) =>
          db
            .query(
              (sql) => sql<Array<MoveOutRow>>`
              select ${MOVE_OUT_COLUMNS(sql)} from move_outs m join policies p on p.id = m.policy_id
              where m.id = ${id}`,
            )
            .pipe(Effect.map((rows) => rows[0]!)),
        setMoveOutDate: (id: string, date: string) =>
          db.query(
            (sql) => sql`
            update move_outs set move_out_date = ${date}::date, updated_at = now()
            where id = ${id} and move_out_date <> ${date}::date`,
          ),
        moveOutsOf: (policyId: string) =>
          db.query(
            (sql) => sql<Array<MoveOutRow>>`
            select ${MOVE_OUT_COLUMNS(sql)} from move_outs m join policies p on p.id = m.policy_id
            where m.policy_id = ${policyId} order by m.id`,
          ),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(LifecycleRepo, LifecycleRepo.make)
}

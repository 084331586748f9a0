import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { type AuditEntry, recordAudit } from "../audit/Audit.ts"
import { makeDelinquenciesRepo } from "./DelinquenciesRepo.ts"
import { makeMoveOutsRepo } from "./MoveOutsRepo.ts"
import { makeSchedulesRepo } from "./SchedulesRepo.ts"

/** NOTIFY channel that wakes the lifecycle job in every worker (a test clock advance, a revision). */
export const LIFECYCLE_CHANNEL = "policy_lifecycle"

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

/**
 * The lifecycle's SQL: here owners, test clocks and revisions; in parts beside it the lifecycle job's
 * (`SchedulesRepo.ts`), delinquencies (`DelinquenciesRepo.ts`) and move-outs (`MoveOutsRepo.ts`).
 */
export class LifecycleRepo extends Context.Service<LifecycleRepo>()(
  "partner-service/policies/LifecycleRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
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
        ...(yield* makeSchedulesRepo),
        ...(yield* makeDelinquenciesRepo),
        ...(yield* makeMoveOutsRepo),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(LifecycleRepo, LifecycleRepo.make)
}

import { Context, Effect, Layer } from "effect"
import { Db, type Sql } from "../platform/Db.ts"
import type { ApplicationRow, PolicyRow } from "./Domain.ts"

export type { ApplicationRow, PolicyRow }

export type ApplicationWrite = Omit<ApplicationRow, "id" | "status" | "declined_rules">

export type PolicyWrite = Omit<
  PolicyRow,
  "id" | "policy_number" | "owner_slug" | "card_last4" | "created_at"
> & { readonly number_prefix: string; readonly year: string }

export interface DocumentsRow {
  readonly policy_id: string
  readonly generation: number
  readonly object_name: string
  readonly status: "requested" | "stored"
}

const APPLICATION_COLUMNS = (sql: Sql) => sql`
  id::text, prospect_id::text, owner_id::text, property_id::text, unit_id::text, status, outcome, product_type,
  product_version, cadence, coverage_amount_cents::text, premium_cents::text, payments,
  to_char(coverage_start_date, 'YYYY-MM-DD') as coverage_start_date,
  to_char(coverage_end_date, 'YYYY-MM-DD') as coverage_end_date,
  declined_rules, pms_type, pms_property_id, pms_unit_id, pms_resident_id, source_prospect_id`

const selectPolicies = (sql: Sql, where: ReturnType<Sql>) => sql<Array<PolicyRow>>`
  select p.id::text, p.policy_number, p.application_id::text, p.prospect_id::text, p.owner_id::text,
         o.slug as owner_slug, p.property_id::text, p.unit_id::text, p.status, p.product_type, p.product_version,
         p.cadence, p.premium_cents::text, p.payments, p.coverage_amount_cents::text,
         to_char(p.coverage_start_date, 'YYYY-MM-DD') as coverage_start_date,
         to_char(p.coverage_end_date, 'YYYY-MM-DD') as coverage_end_date,
         p.payment_method_id::text, m.last4 as card_last4, p.pms_type, p.pms_property_id, p.pms_unit_id,
         p.pms_resident_id, p.source_prospect_id, p.insured_name, p.premises, p.unit_name, p.policy_holder_name,
         to_char(p.next_charge_on, 'YYYY-MM-DD') as next_charge_on,
         to_char(p.issued_on, 'YYYY-MM-DD') as issued_on,
         to_char(p.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as created_at
  from policies p
  join owners o on o.id = p.owner_id
  join payment_methods m on m.id = p.payment_method_id
  ${where}`

/** Serializes the changes of one policy (its document generations) across processes. */
const POLICY_LOCK = 7_239_410

export class PoliciesRepo extends Context.Service<PoliciesRepo>()("partner-service/policies/PoliciesRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const one = <A>(rows: ReadonlyArray<A>) => rows[0]
    return {
      insertApplication: (write: ApplicationWrite) =>
        db
          .query(
            (sql) => sql<Array<ApplicationRow>>`
              insert into policy_applications ${sql(write as never)}
              returning ${APPLICATION_COLUMNS(sql)}`,
          )
          .pipe(Effect.map((rows) => rows[0]!)),
      findApplication: (id: string) =>
        db
          .query(
            (sql) => sql<Array<ApplicationRow>>`
              select ${APPLICATION_COLUMNS(sql)} from policy_applications where id = ${id}`,
          )
          .pipe(Effect.map(one)),
      /** Records underwriting's outcome (and the rules that declined it); the row after. */
      decideApplication: (id: string, outcome: "quoted" | "declined", rules: ReadonlyArray<string>) =>
        db
          .query(
            (sql) => sql<Array<ApplicationRow>>`
              update policy_applications
              set outcome = ${outcome},
                  declined_rules = ${outcome === "declined" ? sql.array([...rules]) : null}::text[],
                  updated_at = now()
              where id = ${id} and outcome = 'underwriting'
              returning ${APPLICATION_COLUMNS(sql)}`,
          )
          .pipe(Effect.map((rows) => rows[0]!)),
      cancelApplication: (id: string) =>
        db.query(
          (sql) => sql`
            update policy_applications set status = 'canceled', updated_at = now()
            where id = ${id} and status = 'created' and outcome in ('underwriting', 'quoted')`,
        ),
      submitApplication: (id: string) =>
        db
          .query(
            (sql) => sql<Array<ApplicationRow>>`
              update policy_applications set outcome = 'submitted', submitted_at = now(), updated_at = now()
              where id = ${id} and outcome = 'quoted' and status = 'created'
              returning ${APPLICATION_COLUMNS(sql)}`,
          )
          .pipe(Effect.map((rows) => rows[0]!)),
      /** The card as the provider keeps it (its reference and last four digits only); its id. */
      insertPaymentMethod: (card: {
        readonly provider: string
        readonly reference: string
        readonly last4: string
        readonly brand: string
      }) =>
        db
          .query(
            (sql) => sql<Array<{ id: string }>>`
              insert into payment_methods (provider, reference, last4, brand)
              values (${card.provider}, ${card.reference}, ${card.last4}, ${card.brand})
              returning id::text`,
          )
          .pipe(Effect.map((rows) => rows[0]!.id)),
      paymentMethod: (id: string) =>
        db
          .query(
            (sql) => sql<Array<{ provider: string; reference: string; last4: string }>>`
              select provider, reference, last4 from payment_methods where id = ${id}`,
          )
          .pipe(Effect.map((rows) => rows[0]!)),
      /** Charges already asked for an application's first payment (each attempt has a key of its own). */
      initialAttempts: (applicationId: string) =>
        db
          .query(
            (sql) => sql<Array<{ n: number }>>`
              select count(*)::int as n from charges where application_id = ${applicationId} and kind = 'initial'`,
          )
          .pipe(Effect.map((rows) => rows[0]!.n)),
      insertCharge: (charge: {
        readonly application_id: string | null
        readonly policy_id: string | null
        readonly payment_method_id: string
        readonly kind: "initial" | "monthly"
        readonly amount_cents: number
        readonly status: "succeeded" | "declined"
        readonly provider_reference: string | null
        readonly failure_reason: string | null
        readonly idempotency_key: string
      }) =>
        db
          .query(
            (sql) =>
              sql<Array<{ id: string }>>`insert into charges ${sql(charge as never)} returning id::text`,
          )
          .pipe(Effect.map((rows) => rows[0]!.id)),
      attachCharge: (chargeId: string, policyId: string) =>
        db.query((sql) => sql`update charges set policy_id = ${policyId} where id = ${chargeId}`),
      /** Issues a policy; its number is `<prefix>-<year>-<6 digits of a sequence>`. */
      insertPolicy: (write: PolicyWrite) =>
        Effect.gen(function* () {
          const { number_prefix, year, ...columns } = write
          const [next] = yield* db.query(
            (sql) => sql<Array<{ n: string }>>`select nextval('policy_number_seq')::text as n`,
          )
          const policyNumber = `${number_prefix}-${year}-${next!.n.padStart(6, "0")}`
          const [inserted] = yield* db.query(
            (sql) => sql<Array<{ id: string }>>`
              insert into policies ${sql({ ...columns, policy_number: policyNumber } as never)}
              returning id::text`,
          )
          return inserted!.id
        }),
      findPolicy: (id: string) =>
        db.query((sql) => selectPolicies(sql, sql`where p.id = ${id}`)).pipe(Effect.map(one)),
      policyOfApplication: (applicationId: string) =>
        db
          .query((sql) => selectPolicies(sql, sql`where p.application_id = ${applicationId}`))
          .pipe(Effect.map(one)),
      lockPolicy: (id: string) =>
        db.query((sql) => sql`select pg_advisory_xact_lock(${POLICY_LOCK}, hashtext(${id}))`),
      /** A new generation of the policy's archive, under `objectName`; its number. */
      requestDocuments: (policyId: string, objectName: string) =>
        db
          .query(
            (sql) => sql<Array<{ generation: number }>>`
              insert into policy_documents (policy_id, generation, object_name)
              select ${policyId}, coalesce(max(generation), 0) + 1, ${objectName}
              from policy_documents where policy_id = ${policyId}
              returning generation`,
          )
          .pipe(Effect.map((rows) => rows[0]!.generation)),
      documents: (policyId: string, generation: number) =>
        db
          .query(
            (sql) => sql<Array<DocumentsRow>>`
              select policy_id::text, generation, object_name, status from policy_documents
              where policy_id = ${policyId} and generation = ${generation}`,
          )
          .pipe(Effect.map(one)),
      /** Marks a generation stored; false when it already was (a repeated request). */
      markDocumentsStored: (policyId: string, generation: number) =>
        db
          .query(
            (sql) => sql<Array<{ generation: number }>>`
              update policy_documents set status = 'stored', stored_at = now()
              where policy_id = ${policyId} and generation = ${generation} and status = 'requested'
              returning generation`,
          )
          .pipe(Effect.map((rows) => rows.length > 0)),
      /** The newest stored archive of the policy. */
      latestDocuments: (policyId: string) =>
        db
          .query(
            (sql) => sql<Array<DocumentsRow>>`
              select policy_id::text, generation, object_name, status from policy_documents
              where policy_id = ${policyId} and status = 'stored'
              order by generation desc limit 1`,
          )
          .pipe(Effect.map(one)),
      /** Whether an archive of this name was stored (a link names only stored archives). */
      isStoredArchive: (objectName: string) =>
        db
          .query(
            (sql) => sql<Array<{ found: boolean }>>`
              select exists (select 1 from policy_documents where object_name = ${objectName} and status = 'stored')
                as found`,
          )
          .pipe(Effect.map((rows) => rows[0]!.found)),
    }
  }),
}) {
  static readonly layer = Layer.effect(PoliciesRepo, PoliciesRepo.make)
}

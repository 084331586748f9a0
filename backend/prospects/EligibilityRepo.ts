import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { type ProspectRow, type ResolvedProperty, type ResolvedUnit, selectProspects } from "./Repo.ts"

/** Everything an eligibility decision reads, as of one moment. */
export interface EligibilityFactsRow {
  readonly prospect: ProspectRow
  readonly owner: {
    readonly slug: string
    readonly purchase_flow_enabled: boolean
    readonly max_coverage_amount_cents: string | null
  }
  readonly property: ResolvedProperty | undefined
  readonly unit: ResolvedUnit | undefined
}

/** The eligibility actor's SQL: what a decision reads, and its outcome on the version it decided. */
export class EligibilityRepo extends Context.Service<EligibilityRepo>()(
  "partner-service/prospects/EligibilityRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db

      return {
        /** Writes the decision only if no later write superseded the version it decided; whether it landed. */
        recordDecision: (
          id: string,
          version: number,
          decision: {
            readonly effective_coverage_amount_cents: number | null
            readonly sdi_ineligibility_reasons: ReadonlyArray<string>
            readonly cd_ineligibility_reasons: ReadonlyArray<string>
            readonly rg_eligibility_status: "eligible" | "ineligible" | null
            readonly rg_ineligibility_reasons: ReadonlyArray<string> | null
            readonly eligible: boolean
          },
        ) =>
          db
            .query(
              (sql) => sql<Array<{ id: string }>>`
              update prospects
              set status = 'ready', decided_version = version, error_reason = null,
                  effective_coverage_amount_cents = ${decision.effective_coverage_amount_cents},
                  sdi_ineligibility_reasons = ${sql.array([...decision.sdi_ineligibility_reasons])}::text[],
                  cd_ineligibility_reasons = ${sql.array([...decision.cd_ineligibility_reasons])}::text[],
                  rg_eligibility_status = ${decision.rg_eligibility_status},
                  rg_ineligibility_reasons = ${
                    decision.rg_ineligibility_reasons === null
                      ? null
                      : sql.array([...decision.rg_ineligibility_reasons])
                  }::text[],
                  eligible = ${decision.eligible}, updated_at = now()
              where id = ${id} and version = ${version} and status in ('processing', 'error')
              returning id`,
            )
            .pipe(Effect.map((rows) => rows.length > 0)),
        /** Moves a version that cannot be decided to `error`, unless a later write superseded it. */
        recordError: (id: string, version: number, reason: string) =>
          db
            .query(
              (sql) => sql<Array<{ id: string }>>`
              update prospects set status = 'error', error_reason = ${reason}, updated_at = now()
              where id = ${id} and version = ${version} and status = 'processing'
              returning id`,
            )
            .pipe(Effect.map((rows) => rows.length > 0)),
        /**
         * Up to `limit` prospects `processing` since before `before`, oldest first, locked and marked as asked for
         * again now (`updated_at`); their ids.
         */
        takeStale: (before: Date, limit: number) =>
          db
            .query(
              (sql) => sql<Array<{ id: string }>>`
              with stale as (
                select id from prospects where status = 'processing' and updated_at < ${before}
                order by updated_at limit ${limit}
                for update skip locked
              )
              update prospects p set updated_at = now() from stale where p.id = stale.id
              returning p.id`,
            )
            .pipe(Effect.map((rows) => rows.map((r) => r.id))),
        /** The prospect with its owner, building and unit as they are now. */
        facts: (id: string) =>
          Effect.gen(function* () {
            const prospect = yield* db
              .query((sql) => selectProspects(sql, sql`where id = ${id}`))
              .pipe(Effect.map(([row]) => row))
            if (prospect === undefined) return undefined
            const [row] = yield* db.query(
              (sql) => sql<
                Array<{
                  slug: string
                  purchase_flow_enabled: boolean
                  max_coverage_amount_cents: string | null
                  property: ResolvedProperty | null
                  unit: ResolvedUnit | null
                }>
              >`
              select o.slug, o.purchase_flow_enabled, o.max_coverage_amount_cents,
                     (select to_jsonb(p) from (
                        select id::text, external_system_id, pms_type, pms_property_id, active,
                               renter_guarantee_enabled, default_coverage_value::text
                        from properties where id = ${prospect.property_id}) p) as property,
                     (select to_jsonb(u) from (
                        select id::text, external_system_id, default_coverage_value::text
                        from units where id = ${prospect.unit_id}) u) as unit
              from owners o where o.id = ${prospect.owner_id}`,
            )
            return {
              prospect,
              owner: {
                slug: row!.slug,
                purchase_flow_enabled: row!.purchase_flow_enabled,
                max_coverage_amount_cents: row!.max_coverage_amount_cents,
              },
              property: row!.property ?? undefined,
              unit: row!.unit ?? undefined,
            } satisfies EligibilityFactsRow
          }),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(EligibilityRepo, EligibilityRepo.make)
}

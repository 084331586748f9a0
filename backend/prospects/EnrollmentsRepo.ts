import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { LatestCoverage, OfferedProduct } from "./Domain.ts"

/** What `enrollmentFacts` reads besides the prospect. */
export interface EnrollmentFactsRow {
  readonly owner_id: string
  readonly slug: string
  readonly name: string
  /** The owner's brand name, else its name: how renters and partners see the owner. */
  readonly display_name: string
  readonly purchase_flow_enabled: boolean
  readonly max_coverage_amount_cents: string | null
  readonly embedded_frame_ancestors: Array<string>
  readonly flow: "embedded" | "expedited"
  readonly redirect_domains: Array<string>
  readonly property: {
    readonly id: string
    readonly building_name: string
    readonly street: string
    readonly city: string
    readonly state: string
    readonly zip: string
    readonly active: boolean
    readonly renter_guarantee_enabled: boolean
    readonly default_coverage_value: number
    readonly pms_type: string | null
    readonly pms_property_id: string | null
    readonly policy_holder_name: string
  } | null
  readonly unit: {
    readonly id: string
    readonly name: string
    readonly pms_unit_id: string | null
    readonly default_coverage_value: number | null
  } | null
}

/** The enrollment journey's SQL on a prospect: what it reads besides the prospect, and what it writes back. */
export class EnrollmentsRepo extends Context.Service<EnrollmentsRepo>()(
  "partner-service/prospects/EnrollmentsRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db

      return {
        /** The prospect's owner, source, building and unit as they are now, for the enrollment journey. */
        enrollmentFacts: (id: string) =>
          db
            .query(
              (sql) => sql<Array<EnrollmentFactsRow>>`
                select o.id::text as owner_id, o.slug, o.name, coalesce(o.brand_name, o.name) as display_name,
                       o.purchase_flow_enabled,
                       o.max_coverage_amount_cents::text as max_coverage_amount_cents, o.embedded_frame_ancestors,
                       s.flow, s.redirect_domains,
                       (select to_jsonb(p) from (
                          select id::text, building_name, street, city, state, zip, active, renter_guarantee_enabled,
                                 default_coverage_value::float8 as default_coverage_value, pms_type, pms_property_id,
                                 coalesce(policy_holder_name, o.name || ', LLC') as policy_holder_name
                          from properties where id = pr.property_id) p) as property,
                       (select to_jsonb(u) from (
                          select id::text, name, pms_unit_id, default_coverage_value::float8 as default_coverage_value
                          from units where id = pr.unit_id) u) as unit
                from prospects pr
                join owners o on o.id = pr.owner_id
                join sources s on s.code = pr.source
                where pr.id = ${id}`,
            )
            .pipe(Effect.map(([row]) => row)),
        /** The offers the journey computed after the renter's underwriting inputs (published shape). */
        recordOffers: (id: string, offered: ReadonlyArray<OfferedProduct>, percentSavings: number | null) =>
          db.query(
            (sql) => sql`
              update prospects set offered_products = ${sql.json(offered as never)},
                                   percent_savings = ${percentSavings}, updated_at = now()
              where id = ${id}`,
          ),
        recordApplicationSubmitted: (id: string) =>
          db.query(
            (sql) =>
              sql`update prospects set application_submitted = true, updated_at = now() where id = ${id}`,
          ),
        recordLatestCoverage: (id: string, coverage: LatestCoverage) =>
          db.query(
            (sql) => sql`
              update prospects set latest_coverage = ${sql.json(coverage as never)}, updated_at = now()
              where id = ${id}`,
          ),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(EnrollmentsRepo, EnrollmentsRepo.make)
}

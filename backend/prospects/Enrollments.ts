import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import type { EnrollmentFacts, LatestCoverage, OfferedProduct } from "./Domain.ts"
import { EnrollmentsRepo } from "./EnrollmentsRepo.ts"
import { enrollmentUrls } from "./Events.ts"
import { ProspectsRepo } from "./Repo.ts"
import { toInt } from "./View.ts"

/**
 * What the enrollment journey (and the policies it leads to) reads of a prospect and writes back on it: the
 * offers, `application_submitted` and `latest_coverage`, never what a partner writes.
 */
export class Enrollments extends Context.Service<Enrollments>()("partner-service/prospects/Enrollments", {
  make: Effect.gen(function* () {
    const repo = yield* ProspectsRepo
    const enrollments = yield* EnrollmentsRepo
    const config = yield* AppConfig

    /**
     * The enrollment journey's read of a prospect by its key: what the partner sent, with its source, owner,
     * building and unit as they are now; undefined when there is no such prospect.
     */
    const enrollmentFacts = Effect.fn("Enrollments.enrollmentFacts")(function* (
      source: string,
      sourceProspectId: string,
    ) {
      const row = yield* repo.find(source, sourceProspectId)
      if (row === undefined) return undefined
      const more = yield* enrollments.enrollmentFacts(row.id)
      if (more === undefined) return undefined
      const urls = enrollmentUrls(config.enrollmentHost, more.flow, more.slug, row)
      return {
        prospect: {
          id: row.id,
          version: row.version,
          source: row.source,
          sourceProspectId: row.source_prospect_id,
          status: row.status,
          eligible: row.status === "ready" && row.eligible === true,
          email: row.email,
          phone: row.phone,
          firstName: row.first_name,
          lastName: row.last_name,
          birthdate: row.birthdate,
          leaseStartDate: row.lease_start_date,
          leaseEndDate: row.lease_end_date,
          monthlyRentCents: toInt(row.monthly_rent_cents),
          depositAmountCents: toInt(row.deposit_amount_cents),
          screeningResult: row.screening_result as EnrollmentFacts["prospect"]["screeningResult"],
          employmentStatus: row.employment_status as EnrollmentFacts["prospect"]["employmentStatus"],
          yearlyIncome: toInt(row.yearly_income),
          hasSsn: row.has_ssn,
          termsAcceptedAt: row.terms_accepted_at,
          guarantorCoverage: row.guarantor_coverage,
          pmsType: row.pms_type,
          pmsPropertyId: row.pms_property_id,
          pmsUnitId: row.pms_unit_id,
          pmsProspectId: row.pms_prospect_id,
          applicationSubmitted: row.application_submitted ?? false,
        },
        source: { flow: more.flow, redirectDomains: more.redirect_domains },
        owner: {
          id: more.owner_id,
          slug: more.slug,
          name: more.name,
          displayName: more.display_name,
          active: more.purchase_flow_enabled,
          maxCoverageAmountCents: toInt(more.max_coverage_amount_cents),
          embeddedFrameAncestors: more.embedded_frame_ancestors,
        },
        property:
          more.property === null
            ? undefined
            : {
                id: more.property.id,
                buildingName: more.property.building_name,
                street: more.property.street,
                city: more.property.city,
                state: more.property.state,
                zip: more.property.zip,
                active: more.property.active,
                renterGuaranteeEnabled: more.property.renter_guarantee_enabled,
                defaultCoverageMultiplier: more.property.default_coverage_value,
                pmsType: more.property.pms_type,
                pmsPropertyId: more.property.pms_property_id,
                policyHolderName: more.property.policy_holder_name,
              },
        unit:
          more.property === null || more.unit === null
            ? undefined
            : {
                id: more.unit.id,
                name: more.unit.name,
                pmsUnitId: more.unit.pms_unit_id,
                defaultCoverageMultiplier: more.unit.default_coverage_value,
              },
        enrollmentUrl: urls.enrollment_url,
      } satisfies EnrollmentFacts
    })

    /** The journey's offers, published on the prospect as `offered_products` (and `percent_savings`). */
    const recordOffers = Effect.fn("Enrollments.recordOffers")(function* (
      prospectId: string,
      offered: ReadonlyArray<OfferedProduct>,
      percentSavings: number | null,
    ) {
      yield* enrollments.recordOffers(prospectId, offered, percentSavings)
    })

    /** The renter submitted an application: `application_submitted` from now on. */
    const recordApplicationSubmitted = Effect.fn("Enrollments.recordApplicationSubmitted")(function* (
      prospectId: string,
    ) {
      yield* enrollments.recordApplicationSubmitted(prospectId)
    })

    /** The coverage of the prospect's latest documented policy: `latest_coverage`. */
    const recordLatestCoverage = Effect.fn("Enrollments.recordLatestCoverage")(function* (
      prospectId: string,
      coverage: LatestCoverage,
    ) {
      yield* enrollments.recordLatestCoverage(prospectId, coverage)
    })

    return { enrollmentFacts, recordOffers, recordApplicationSubmitted, recordLatestCoverage }
  }),
}) {
  static readonly layer = Layer.effect(Enrollments, Enrollments.make).pipe(
    Layer.provide(Layer.mergeAll(ProspectsRepo.layer, EnrollmentsRepo.layer)),
  )
}

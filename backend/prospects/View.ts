import type { Prospect } from "./Domain.ts"
import { INGEST_FIELDS, REQUIRED_FIELDS } from "./Domain.ts"
import { enrollmentUrls, renterGuaranteeFields } from "./Events.ts"
import type { ProspectRow, ProspectWrite } from "./Repo.ts"
import type { Source } from "./Domain.ts"

export const toInt = (value: string | null) => (value === null ? null : Number(value))

/** The required fields a prospect still lacks on its source. */
export const missingFields = (row: ProspectWrite, source: Pick<Source, "optionalIngestFields">) =>
  [...REQUIRED_FIELDS, ...(source.optionalIngestFields ? [] : INGEST_FIELDS)].filter(
    (field) => row[field] === null,
  )

/** The prospect as the API returns it: published fields, the spec's additions, reasons the webhook omits. */
export const prospectView = (
  row: ProspectRow,
  slug: string,
  source: Source,
  enrollmentHost: string,
): Prospect => {
  const decided = row.status === "ready"
  const reasons = (name: "sdi_ineligibility_reasons" | "cd_ineligibility_reasons") =>
    decided && (row[name]?.length ?? 0) > 0 ? { [name]: row[name]! } : {}
  return {
    id: Number(row.id),
    source: row.source,
    source_prospect_id: row.source_prospect_id,
    status: row.status,
    email: row.email,
    phone: row.phone,
    first_name: row.first_name,
    last_name: row.last_name,
    birthdate: row.birthdate,
    lease_start_date: row.lease_start_date,
    lease_end_date: row.lease_end_date,
    monthly_rent_cents: toInt(row.monthly_rent_cents),
    deposit_amount_cents: toInt(row.deposit_amount_cents),
    screening_result: row.screening_result as Prospect["screening_result"],
    employment_status: row.employment_status as Prospect["employment_status"],
    yearly_income: toInt(row.yearly_income),
    has_ssn: row.has_ssn,
    citizenship: row.citizenship,
    education_level: row.education_level,
    terms_accepted_at: row.terms_accepted_at,
    authorized_members: row.authorized_members as Prospect["authorized_members"],
    pms_type: row.pms_type as Prospect["pms_type"],
    pms_property_id: row.pms_property_id,
    pms_unit_id: row.pms_unit_id,
    pms_prospect_id: row.pms_prospect_id,
    property_external_id: row.property_external_id,
    unit_external_id: row.unit_external_id,
    effective_coverage_amount_cents: decided ? toInt(row.effective_coverage_amount_cents) : null,
    percent_savings: row.percent_savings ?? null,
    ...enrollmentUrls(enrollmentHost, source.flow, slug, row),
    offered_products: row.offered_products ?? [],
    application_submitted: row.application_submitted ?? false,
    latest_coverage: row.latest_coverage ?? null,
    guarantor_coverage: row.guarantor_coverage,
    ...renterGuaranteeFields(row),
    ...reasons("sdi_ineligibility_reasons"),
    ...reasons("cd_ineligibility_reasons"),
    missing_fields: missingFields(row, source),
    ...(row.status === "error" && row.error_reason !== null ? { error_reason: row.error_reason } : {}),
  }
}

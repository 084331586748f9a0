/**
 * A prospect's fields in the order of the partner service spec's prospect table, then the service's other
 * fields in the order its schema declares them, then any others by name; fields without a value are left out.
 */
const SPEC_ORDER = [
  "source",
  "source_prospect_id",
  "email",
  "phone",
  "first_name",
  "last_name",
  "birthdate",
  "lease_start_date",
  "lease_end_date",
  "monthly_rent_cents",
  "deposit_amount_cents",
  "screening_result",
  "employment_status",
  "yearly_income",
  "has_ssn",
  "terms_accepted_at",
  "authorized_members",
  "social_security_number",
  "citizenship",
  "education_level",
  "guarantor_coverage",
  "pms_type",
  "pms_property_id",
  "pms_unit_id",
  "pms_prospect_id",
  "property_external_id",
  "unit_external_id",
]

const rank = (name: string) => {
  const at = SPEC_ORDER.indexOf(name)
  return at === -1 ? SPEC_ORDER.length : at
}

export const orderedFields = (fields: Readonly<Record<string, unknown>>) =>
  Object.entries(fields)
    .filter(([, value]) => value !== null && value !== undefined)
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))

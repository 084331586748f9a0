import { Schema } from "effect"
import { type PolicyStatus, PolicyStatuses } from "./Statuses.ts"

/** The products a renter can choose in the enrollment flow, as `offered_products` and applications name them. */
export const ProductTypes = [
  "security_deposit_insurance",
  "cash_deposit",
  "renter_guarantee_insurance",
] as const
export const ProductType = Schema.Literals(ProductTypes)
export type ProductType = typeof ProductType.Type

/** How a premium is paid: all at once, or each month of the coverage. */
export const Cadences = ["upfront", "monthly"] as const
export const Cadence = Schema.Literals(Cadences)
export type Cadence = typeof Cadence.Type

/** `product_version` of the renter guarantee product (its first version); no other product has one. */
export const RENTER_GUARANTEE_VERSION = "2025.12.01"

/** The PDFs of a policy's document archive, by the names they have inside it (and on their own links). */
export const documentFileNames = (policyNumber: string) => ({
  declaration: `policy-declaration-${policyNumber}.pdf`,
  certificate: `certificate-of-coverage-${policyNumber}.pdf`,
})

/**
 * What a policy's `product_type` says for a chosen product: a cash deposit the service holds is a
 * `service_deposit` policy (the spec's neutral word for the operator's deposit product).
 */
export const policyProductOf = (product: ProductType) =>
  product === "cash_deposit" ? ("service_deposit" as const) : product

export { type PolicyStatus, PolicyStatuses }

/** A policy is `upcoming` until its coverage starts, then `active`. */
export const statusOn = (today: string, start: string): PolicyStatus =>
  today < start ? "upcoming" : "active"
/** `YYYY-MM-DD` plus `months`, on the same day of the month or the month's last day. */
export const addMonths = (date: string, months: number) => {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number]
  const first = new Date(Date.UTC(y, m - 1 + months, 1))
  const last = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 0)).getUTCDate()
  first.setUTCDate(Math.min(d, last))
  return first.toISOString().slice(0, 10)
}

/** `pa_<n>` */
export const applicationId = (id: string) => `pa_${id}`
/** `policy_<n>` */
export const policyId = (id: string) => `policy_${id}`

/** The row id inside a `pa_` or `policy_` id; undefined for anything else. */
export const rowIdOf = (prefix: "pa_" | "policy_", id: string) =>
  id.startsWith(prefix) && /^\d+$/.test(id.slice(prefix.length)) ? id.slice(prefix.length) : undefined

/** A stored application (as the repository reads it); bigints as strings, dates as `YYYY-MM-DD`. */
export interface ApplicationRow {
  readonly id: string
  readonly prospect_id: string
  readonly owner_id: string
  readonly property_id: string | null
  readonly unit_id: string | null
  readonly status: "created" | "canceled"
  readonly outcome: "underwriting" | "quoted" | "declined" | "submitted"
  readonly product_type: ProductType
  readonly product_version: string | null
  readonly cadence: Cadence
  readonly coverage_amount_cents: string
  readonly premium_cents: string
  readonly payments: number
  readonly coverage_start_date: string
  readonly coverage_end_date: string
  readonly declined_rules: Array<string> | null
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly pms_unit_id: string | null
  readonly pms_resident_id: string | null
  readonly source_prospect_id: string | null
}

/** A stored policy (as the repository reads it), with its owner's slug and its card's last four digits. */
export interface PolicyRow {
  readonly id: string
  readonly policy_number: string
  readonly application_id: string | null
  readonly prospect_id: string | null
  readonly owner_id: string
  readonly owner_slug: string
  readonly property_id: string | null
  readonly unit_id: string | null
  readonly status: PolicyStatus
  readonly product_type: "security_deposit_insurance" | "renter_guarantee_insurance" | "service_deposit"
  readonly product_version: string | null
  readonly cadence: Cadence
  readonly premium_cents: string
  readonly payments: number
  readonly coverage_amount_cents: string
  readonly coverage_start_date: string
  readonly coverage_end_date: string
  readonly payment_method_id: string
  readonly card_last4: string
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly pms_unit_id: string | null
  readonly pms_resident_id: string | null
  readonly source_prospect_id: string | null
  readonly insured_name: string
  readonly premises: string
  readonly unit_name: string
  readonly policy_holder_name: string
  readonly next_charge_on: string | null
  /** `YYYY-MM-DD`: the owner's date when the policy was sold (its test clock's outside production). */
  readonly issued_on: string
  /** ISO 8601 UTC */
  readonly created_at: string
}

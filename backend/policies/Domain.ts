import { Schema } from "effect"

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

/**
 * What a policy's `product_type` says for a chosen product: a cash deposit the service holds is a
 * `service_deposit` policy (the spec's neutral word for the operator's deposit product).
 */
export const policyProductOf = (product: ProductType) =>
  product === "cash_deposit" ? ("service_deposit" as const) : product

export const PolicyStatuses = ["active", "upcoming", "pending", "expired", "canceled"] as const
export type PolicyStatus = (typeof PolicyStatuses)[number]

/** `pa_<n>` */
export const applicationId = (id: string) => `pa_${id}`
/** `policy_<n>` */
export const policyId = (id: string) => `policy_${id}`

/** The row id inside a `pa_` or `policy_` id; undefined for anything else. */
export const rowIdOf = (prefix: "pa_" | "policy_", id: string) =>
  id.startsWith(prefix) && /^\d+$/.test(id.slice(prefix.length)) ? id.slice(prefix.length) : undefined

/**
 * A policy's statuses and the products a policy is of, in a file that imports nothing so the console's schemas
 * can take them as they are.
 */

export const PolicyStatuses = ["active", "upcoming", "pending", "expired", "canceled"] as const
export type PolicyStatus = (typeof PolicyStatuses)[number]

/** Statuses in which a policy still covers, can be revised, charged, canceled or expired. */
export const IN_FORCE = ["active", "upcoming", "pending"] as const

/** The products a policy is of: an application's `cash_deposit` is issued as a `service_deposit` policy. */
export const PolicyProducts = [
  "security_deposit_insurance",
  "renter_guarantee_insurance",
  "service_deposit",
] as const

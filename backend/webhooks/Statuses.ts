/**
 * The webhooks context's statuses, in a file that imports nothing so the console's schemas can take them as they
 * are: an endpoint's, a delivery's (as the partner API and as the console show it) and a replay's.
 */

/** Only `active` endpoints receive deliveries; a `suspended` one's are recorded and held until it is active. */
export const EndpointStatuses = ["active", "suspended", "disabled"] as const

export const DeliveryStatuses = [
  "pending",
  "delivering",
  "delivered",
  "retrying",
  "rate_limited",
  "failed",
] as const

/** The statuses the console shows a delivery in: the partner API's and `held` (its endpoint is suspended). */
export const ShownDeliveryStatuses = [...DeliveryStatuses, "held"] as const
export type ShownDeliveryStatus = (typeof ShownDeliveryStatuses)[number]

export const ReplayStatuses = ["running", "completed", "canceled"] as const

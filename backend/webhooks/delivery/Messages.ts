import { Schema } from "effect"
import type { DeliveryStatus } from "../Domain.ts"

/**
 * The delivery engine's messages on the `WEBHOOKS` stream. Subjects are those of `docs/architecture.md`, without the deployment
 * prefix.
 */

/** `webhooks.attempt.<endpoint_id>`: make this attempt of this delivery, if the delivery still expects it. */
export const AttemptMessage = Schema.Struct({
  delivery_id: Schema.Int,
  series: Schema.Int,
  attempt: Schema.Int,
})
export type AttemptMessage = typeof AttemptMessage.Type

/** `webhooks.attempt.<endpoint_id>`: attempts need no order among themselves, so the subject has no partition. */
export const attemptSubject = (endpointId: number | string) => `webhooks.attempt.${endpointId}`

const encoder = new TextEncoder()

/** The attempt message naming a delivery's current attempt. */
export const encodeAttempt = (delivery: {
  readonly id: number
  readonly series: number
  readonly attempt_number: number
}): Uint8Array =>
  encoder.encode(
    JSON.stringify({ delivery_id: delivery.id, series: delivery.series, attempt: delivery.attempt_number }),
  )

/** `webhooks.status.<endpoint_id>`: a delivery changed status (for the console's live view; the DB is the record). */
export interface StatusMessage {
  readonly delivery_id: number
  readonly endpoint_id: number
  readonly event: string
  readonly status: DeliveryStatus
  readonly series: number
  readonly attempt_number: number
  readonly status_code?: number
  readonly failure_reason?: string
  readonly next_retry_at?: string
  readonly at: string
}

export const statusSubject = (endpointId: number | string) => `webhooks.status.${endpointId}`

/** What a row of `DeliveryTable` shows of a delivery: the console's and the portal's deliveries both have it. */
export interface DeliveryRow {
  readonly id: number
  readonly event_type: string
  readonly status: string
  readonly endpoint: { readonly id: number; readonly name: string; readonly destination_url: string }
  readonly attempt_count: number
  readonly last_status_code: number | null
  readonly last_failure_reason: string | null
  readonly next_retry_at: string | null
  readonly created_at: string
}

/** An extra column naming whom a delivery's event is about. */
export interface SubscriberColumn<D> {
  readonly label: string
  readonly of: (delivery: D) => string
}

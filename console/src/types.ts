// Shapes of the operator API (docs: /work/coordination/operator-api.md, served under /api on the console port).

export type Role = "viewer" | "operator" | "admin"

export interface Operator {
  readonly email: string
  readonly role: Role
}

export interface SessionBody {
  readonly operator: Operator
  readonly csrf_token: string
}

export interface OwnerRef {
  readonly slug: string
  readonly name: string
}

export interface ProviderRef {
  readonly name: string
}

export const DELIVERY_STATUSES = [
  "pending",
  "delivering",
  "delivered",
  "retrying",
  "rate_limited",
  "failed",
  "held",
] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

export interface Delivery {
  readonly id: number
  readonly event_type: string
  readonly status: DeliveryStatus
  readonly owner: OwnerRef | null
  readonly provider: ProviderRef | null
  readonly endpoint: { readonly id: number; readonly name: string; readonly destination_url: string }
  readonly attempt_number: number
  readonly created_at: string
  readonly last_attempted_at: string | null
  readonly next_retry_at: string | null
  readonly delivered_at: string | null
  readonly last_status_code: number | null
  readonly last_failure_reason: string | null
}

export interface Attempt {
  readonly series: number
  readonly attempt_number: number
  readonly started_at: string
  readonly status_code: number | null
  readonly duration_ms: number | null
  readonly failure_reason: string | null
  readonly response_excerpt: string | null
}

export interface DeliveryDetail extends Delivery {
  readonly payload_raw: string
  readonly payload: unknown
  readonly request_headers: Record<string, string>
  readonly attempts: ReadonlyArray<Attempt>
}

export interface BulkRetry {
  readonly id: number | string
  readonly filter: Record<string, string>
  readonly status: "running" | "completed" | "cancelled"
  readonly total: number
  readonly done: number
  readonly created_by: string
  readonly created_at: string
  readonly finished_at: string | null
}

export type EndpointStatus = "active" | "suspended" | "disabled"

export interface Endpoint {
  readonly id: number
  readonly name: string
  readonly owner: OwnerRef | null
  readonly provider: ProviderRef | null
  readonly destination_url: string
  readonly events: ReadonlyArray<string>
  readonly status: EndpointStatus
  readonly suspension_reason: string | null
  readonly custom_headers: Record<string, string>
  readonly created_at: string
  readonly updated_at: string
}

export interface HealthBucket {
  readonly start: string
  readonly attempts: number
  readonly succeeded: number
  readonly failed: number
  readonly p50_ms: number | null
  readonly p95_ms: number | null
}

export interface HealthWindow {
  readonly attempts: number
  readonly succeeded: number
  readonly failed: number
  readonly success_rate: number | null
  readonly p50_ms: number | null
  readonly p95_ms: number | null
  readonly buckets: ReadonlyArray<HealthBucket>
}

export interface EndpointHealth {
  readonly waiting: number
  readonly hour: HealthWindow
  readonly day: HealthWindow
}

export interface Subscriber {
  readonly owner: OwnerRef | null
  readonly provider: ProviderRef | null
  readonly secrets: ReadonlyArray<{ readonly created_at: string; readonly expires_at: string | null }>
}

export interface AuditEntry {
  readonly id: number | string
  readonly at: string
  readonly actor: string
  readonly channel: "console" | "cli" | "api"
  readonly action: string
  readonly target: string | null
  readonly before: unknown
  readonly after: unknown
}

export interface OperatorAccount {
  readonly email: string
  readonly role: Role
  readonly disabled: boolean
  readonly created_at: string
  readonly last_sign_in_at: string | null
}

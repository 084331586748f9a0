import type { AuditEntry } from "../types"
import { api, withQuery } from "./api"

// Shapes of the operator API's policy routes (docs/operator-api.md).

/** Statuses in which a policy still covers and may be revised or canceled. */
export const IN_FORCE = ["active", "upcoming", "pending"] as const

export interface PolicyDelinquency {
  readonly id: string
  readonly status: "active" | "resolved"
  readonly amount_cents: number
  readonly missed_installments: number
  readonly resolution?: string
  readonly resolved_amount_cents?: number
  readonly resolved_at?: string
  readonly created_at: string
}

export interface PolicyMoveOut {
  readonly id: number
  readonly external_id: string
  readonly status: string
  readonly move_out_date: string
  readonly created_at: string
}

export type PolicyRevision = Pick<
  AuditEntry,
  "id" | "at" | "actor" | "channel" | "action" | "before" | "after"
>

/** A policy as `policies show` has it: the partner's payload, then what only operators see. */
export interface PolicyDetail {
  readonly id: string
  readonly policy_number: string
  readonly status: string
  readonly product_type: string
  readonly product_version?: string
  readonly coverage_amount_cents: number
  readonly coverage_start_date: string
  readonly coverage_end_date: string
  readonly admin_policy_url: string
  readonly source_prospect_id?: string
  readonly owner_slug: string
  readonly policy_url: string | null
  readonly owner_today: string
  readonly insured_name: string | null
  readonly premises: string | null
  readonly unit_name: string | null
  readonly policy_holder_name: string | null
  readonly cadence: string
  readonly premium_cents: number
  readonly payments: number
  readonly installments_billed: number
  readonly next_charge_on: string | null
  readonly card_last4: string | null
  readonly cancellation_reason?: string
  readonly delinquencies: ReadonlyArray<PolicyDelinquency>
  readonly move_outs: ReadonlyArray<PolicyMoveOut>
  readonly revisions: ReadonlyArray<PolicyRevision>
}

export interface PolicySummary {
  readonly id: string
  readonly policy_number: string
  readonly status: string
  readonly product_type: string
  readonly owner_slug: string
  readonly insured_name: string | null
}

export interface RevisionChanges {
  coverage_cents?: number
  start?: string
  end?: string
  unit?: string
  property?: string
}

const policyPath = (id: string) => `/api/policies/${encodeURIComponent(id)}`

export const getPolicy = async (id: string) =>
  (await api<{ policy: PolicyDetail }>("GET", policyPath(id))).policy

export const findPolicies = async (number: string) =>
  (await api<{ policies: ReadonlyArray<PolicySummary> }>("GET", withQuery("/api/policies", { number })))
    .policies

export const revisePolicy = (id: string, changes: RevisionChanges) =>
  api<{ changed: boolean; canceled: boolean; policy: PolicyDetail }>(
    "POST",
    `${policyPath(id)}/revise`,
    changes,
  )

export const cancelPolicy = async (id: string, reason: string) =>
  (await api<{ policy: PolicyDetail }>("POST", `${policyPath(id)}/cancel`, { reason })).policy

export const resolveDelinquency = async (id: string) =>
  (
    await api<{ delinquency: PolicyDelinquency }>(
      "POST",
      `/api/delinquencies/${encodeURIComponent(id)}/resolve`,
      {},
    )
  ).delinquency

import {
  DelinquencyAnswer,
  PoliciesAnswer,
  PolicyAnswer,
  type RevisionRequest,
  RevisionAnswer,
} from "../schemas"
import { api, withQuery } from "./api"

export type {
  PolicyDelinquency,
  PolicyDetail,
  PolicyMoveOut,
  PolicyRevision,
  PolicySummary,
} from "../schemas"

/** The revision a form is filling in. */
export type RevisionChanges = { -readonly [K in keyof RevisionRequest]: RevisionRequest[K] }
export { IN_FORCE } from "../schemas"

const policyPath = (id: string) => `/api/policies/${encodeURIComponent(id)}`

export const getPolicy = async (id: string) => (await api(PolicyAnswer, "GET", policyPath(id))).policy

export const findPolicies = async (number: string) =>
  (await api(PoliciesAnswer, "GET", withQuery("/api/policies", { number }))).policies

/** The policy list's filters, as the URL and the API name them. */
export const POLICY_FILTERS = ["status", "owner", "product"] as const

/** A page of every policy, newest first, under the filters. */
export const listPolicies = (filters: Record<(typeof POLICY_FILTERS)[number] | "cursor", string>) =>
  api(PoliciesAnswer, "GET", withQuery("/api/policies", filters))

export const revisePolicy = (id: string, changes: RevisionChanges) =>
  api(RevisionAnswer, "POST", `${policyPath(id)}/revise`, changes)

export const cancelPolicy = async (id: string, reason: string) =>
  (await api(PolicyAnswer, "POST", `${policyPath(id)}/cancel`, { reason })).policy

export const resolveDelinquency = async (id: string) =>
  (await api(DelinquencyAnswer, "POST", `/api/delinquencies/${encodeURIComponent(id)}/resolve`, {}))
    .delinquency

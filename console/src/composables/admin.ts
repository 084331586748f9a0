import {
  AuditPage,
  EndedOverlap,
  OperatorAnswer,
  OperatorCreated,
  OperatorsAnswer,
  RotatedSecret,
  SubscribersAnswer,
} from "../schemas"
import type { Role } from "../types"
import { api, type Query, withQuery } from "./api"

export const AUDIT_FILTERS = ["actor", "action", "target", "since", "until"] as const

export const listAudit = (filters: Query) => api(AuditPage, "GET", withQuery("/api/audit", filters))

export const listSecrets = async () => (await api(SubscribersAnswer, "GET", "/api/secrets")).subscribers

export const rotateSecret = (subscriber: { owner?: string; provider?: string }, overlapHours: number) =>
  api(RotatedSecret, "POST", "/api/secrets/rotate", { ...subscriber, overlap_hours: overlapHours })

/** Ends the rotation overlap: only the subscriber's newest secret signs from now on. */
export const endOverlap = (subscriber: { owner?: string; provider?: string }) =>
  api(EndedOverlap, "POST", "/api/secrets/end-overlap", subscriber)

export const listOperators = async () => (await api(OperatorsAnswer, "GET", "/api/operators")).operators

export const createOperator = (email: string, role: Role) =>
  api(OperatorCreated, "POST", "/api/operators", { email, role })

export const updateOperator = async (email: string, change: { role?: Role; disabled?: boolean }) =>
  (await api(OperatorAnswer, "PUT", `/api/operators/${encodeURIComponent(email)}`, change)).operator

import type { AuditEntry, OperatorAccount, Role, Subscriber } from "../types"
import { api, type Query, withQuery } from "./api"

export const AUDIT_FILTERS = ["actor", "action", "target", "since", "until"] as const

export const listAudit = (filters: Query) =>
  api<{ entries: ReadonlyArray<AuditEntry>; next_cursor: string | null }>(
    "GET",
    withQuery("/api/audit", filters),
  )

export const listSecrets = async () =>
  (await api<{ subscribers: ReadonlyArray<Subscriber> }>("GET", "/api/secrets")).subscribers

export const rotateSecret = (subscriber: { owner?: string; provider?: string }, overlapHours: number) =>
  api<{ secret: string; created_at: string; previous_expires_at: string | null }>(
    "POST",
    "/api/secrets/rotate",
    {
      ...subscriber,
      overlap_hours: overlapHours,
    },
  )

export const listOperators = async () =>
  (await api<{ operators: ReadonlyArray<OperatorAccount> }>("GET", "/api/operators")).operators

export const createOperator = (email: string, role: Role) =>
  api<{ operator: OperatorAccount; password: string }>("POST", "/api/operators", { email, role })

export const updateOperator = async (email: string, change: { role?: Role; disabled?: boolean }) =>
  (await api<{ operator: OperatorAccount }>("PUT", `/api/operators/${encodeURIComponent(email)}`, change))
    .operator

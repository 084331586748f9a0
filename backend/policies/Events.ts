import { Schema } from "effect"
import type { OutboxMessage } from "../platform/Outbox.ts"
import { partitionedSubject } from "../platform/Partition.ts"
import type { Payload } from "../events/Catalog.ts"
import { eventMessage } from "../events/Envelope.ts"
import { type ApplicationRow, applicationId, policyId, type PolicyRow } from "./Domain.ts"

/** Every message about one application shares this outbox key, so its events are published in commit order. */
export const applicationKey = (id: string) => `application:${id}`
/** Every message about one policy (its events and its document requests) shares this key. */
export const policyKey = (id: string) => `policy:${id}`

/** Partitions of `documents.generate`: one policy's generations are made one at a time, in order. */
export const DOCUMENT_PARTITIONS = 8

/** `documents.generate.<owner_slug>.<partition>`: make this generation of the policy's archive. */
export const DocumentsRequested = Schema.Struct({
  policy_id: Schema.String,
  generation: Schema.Int,
})
export type DocumentsRequested = typeof DocumentsRequested.Type

export const documentsRequested = (slug: string, policy: string, generation: number): OutboxMessage => ({
  subject: partitionedSubject(`documents.generate.${slug}`, policyKey(policy), DOCUMENT_PARTITIONS),
  key: policyKey(policy),
  payload: { policy_id: policy, generation } satisfies DocumentsRequested,
})

/** PMS identifiers of the matched resident, each omitted when unknown (never null). */
const pmsFields = (row: {
  readonly pms_type: string | null
  readonly pms_property_id: string | null
  readonly pms_unit_id: string | null
  readonly pms_resident_id: string | null
}) => ({
  ...(row.pms_type !== null ? { pms_type: row.pms_type } : {}),
  ...(row.pms_property_id !== null ? { pms_property_id: row.pms_property_id } : {}),
  ...(row.pms_unit_id !== null ? { pms_unit_id: row.pms_unit_id } : {}),
  ...(row.pms_resident_id !== null ? { pms_resident_id: row.pms_resident_id } : {}),
})

/** `policy_application`: optional fields omitted, `product_version` exactly with the renter guarantee. */
export const policyApplication = (row: ApplicationRow): Payload<"policy_application.created"> => ({
  id: applicationId(row.id),
  status: row.status,
  ...pmsFields(row),
  ...(row.source_prospect_id !== null ? { source_prospect_id: row.source_prospect_id } : {}),
  product_type: row.product_type,
  ...(row.product_version !== null ? { product_version: row.product_version } : {}),
})

export type ApplicationEvent =
  | "policy_application.created"
  | "policy_application.quoted"
  | "policy_application.declined"
  | "policy_application.submitted"

export const applicationEvent = (event: ApplicationEvent, slug: string, row: ApplicationRow): OutboxMessage =>
  eventMessage(event, slug, applicationKey(row.id), policyApplication(row), row.property_id)

/** `insurance_policy`; `policy_url` only on `policy.documents_updated`, only when an archive exists. */
export const insurancePolicy = (row: PolicyRow, consoleBaseUrl: string): Payload<"policy.created"> => ({
  id: policyId(row.id),
  policy_number: row.policy_number,
  status: row.status,
  ...pmsFields(row),
  product_type: row.product_type,
  ...(row.product_version !== null ? { product_version: row.product_version } : {}),
  coverage_amount_cents: Number(row.coverage_amount_cents),
  coverage_start_date: row.coverage_start_date,
  coverage_end_date: row.coverage_end_date,
  admin_policy_url: adminPolicyUrl(consoleBaseUrl, row.id),
  ...(row.source_prospect_id !== null ? { source_prospect_id: row.source_prospect_id } : {}),
})

/** `{CONSOLE_BASE_URL}/policies/policy_<id>`: the policy's page on the operator console. */
export const adminPolicyUrl = (consoleBaseUrl: string, id: string) =>
  `${consoleBaseUrl.replace(/\/+$/, "")}/policies/${policyId(id)}`

export type PolicyEvent = "policy.created" | "policy.updated" | "policy.canceled" | "policy.expired"

export const policyEvent = (
  event: PolicyEvent,
  slug: string,
  row: PolicyRow,
  consoleBaseUrl: string,
): OutboxMessage =>
  eventMessage(event, slug, policyKey(row.id), insurancePolicy(row, consoleBaseUrl), row.property_id)

export const documentsUpdated = (
  slug: string,
  row: PolicyRow,
  consoleBaseUrl: string,
  policyUrl: string,
): OutboxMessage =>
  eventMessage(
    "policy.documents_updated",
    slug,
    policyKey(row.id),
    { ...insurancePolicy(row, consoleBaseUrl), policy_url: policyUrl },
    row.property_id,
  )

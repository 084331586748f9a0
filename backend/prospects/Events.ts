import { Schema } from "effect"
import type { OutboxMessage } from "../platform/Outbox.ts"
import { partitionedSubject } from "../platform/Partition.ts"
import type { Payload } from "../events/Catalog.ts"
import { eventMessage } from "../events/Envelope.ts"
import type { ProspectRow } from "./Repo.ts"
import type { EnrollmentFlow } from "./Domain.ts"

/** Partitions of `eligibility.requested`: one durable consumer each, one prospect's requests in one. */
export const ELIGIBILITY_PARTITIONS = 16

/** Every message about one prospect shares this outbox key, so they are published in commit order. */
export const prospectKey = (id: string) => `prospect:${id}`

/** `eligibility.requested.<owner_slug>.<partition>`: decide this version of the prospect. */
export const EligibilityRequested = Schema.Struct({
  prospect_id: Schema.String,
  version: Schema.Int,
  source: Schema.String,
  source_prospect_id: Schema.String,
})
export type EligibilityRequested = typeof EligibilityRequested.Type

/** Which version of which prospect a message is about. */
const requestOf = (row: ProspectRow): EligibilityRequested => ({
  prospect_id: row.id,
  version: row.version,
  source: row.source,
  source_prospect_id: row.source_prospect_id,
})

export const eligibilityRequested = (slug: string, row: ProspectRow): OutboxMessage => ({
  subject: partitionedSubject(`eligibility.requested.${slug}`, prospectKey(row.id), ELIGIBILITY_PARTITIONS),
  key: prospectKey(row.id),
  payload: requestOf(row),
})

/** `eligibility.decided.<owner_slug>`: what was decided for a version, reasons included, for operators. */
export const eligibilityDecided = (slug: string, row: ProspectRow): OutboxMessage => ({
  subject: `eligibility.decided.${slug}`,
  key: prospectKey(row.id),
  payload: {
    ...requestOf(row),
    status: row.status,
    eligible: row.eligible,
    effective_coverage_amount_cents:
      row.effective_coverage_amount_cents === null ? null : Number(row.effective_coverage_amount_cents),
    sdi_ineligibility_reasons: row.sdi_ineligibility_reasons,
    cd_ineligibility_reasons: row.cd_ineligibility_reasons,
    rg_eligibility_status: row.rg_eligibility_status,
    rg_ineligibility_reasons: row.rg_ineligibility_reasons,
    error_reason: row.error_reason,
  },
})

export interface EnrollmentUrls {
  readonly enrollment_url: string | null
  readonly hosted_enrollment_url: string | null
}

const NO_URLS: EnrollmentUrls = { enrollment_url: null, hosted_enrollment_url: null }

/**
 * `{host}/enrollment/<flow>/<owner_slug>/<source>/<source_prospect_id>?email=<email>`, on the source's flow and
 * on the expedited (hosted) flow; both null unless the prospect is `ready` and eligible for some product.
 */
export const enrollmentUrls = (
  enrollmentHost: string,
  flow: EnrollmentFlow,
  slug: string,
  row: Pick<ProspectRow, "status" | "eligible" | "email" | "source" | "source_prospect_id">,
): EnrollmentUrls => {
  if (row.status !== "ready" || row.eligible !== true || row.email === null) return NO_URLS
  const host = enrollmentHost.replace(/\/+$/, "")
  const link = (kind: EnrollmentFlow) =>
    `${host}/enrollment/${kind}/${encodeURIComponent(slug)}/${encodeURIComponent(row.source)}/` +
    `${encodeURIComponent(row.source_prospect_id)}?email=${encodeURIComponent(row.email!)}`
  return { enrollment_url: link(flow), hosted_enrollment_url: link("expedited") }
}

/** The renter guarantee fields: present only with `guarantor_coverage`, the status only once decided. */
export const renterGuaranteeFields = (
  row: Pick<
    ProspectRow,
    "guarantor_coverage" | "rg_eligibility_status" | "rg_ineligibility_reasons" | "status"
  >,
) => {
  if (!row.guarantor_coverage) return {}
  const decided = row.status === "ready" && row.rg_eligibility_status !== null
  return {
    ...(decided ? { rg_eligibility_status: row.rg_eligibility_status! } : {}),
    rg_ineligibility_reasons: decided ? (row.rg_ineligibility_reasons ?? []) : [],
  }
}

/** `third_party_prospect` of `prospect.ready` and `prospect.incomplete`: optional fields omitted, never null. */
export const thirdPartyProspect = (row: ProspectRow, urls: EnrollmentUrls): Payload<"prospect.ready"> => ({
  id: `tpp_${row.id}`,
  source_prospect_id: row.source_prospect_id,
  status: row.status,
  ...urls,
  ...(row.pms_type === "yardi" ? { pms_type: row.pms_type } : {}),
  ...(row.pms_property_id !== null ? { pms_property_id: row.pms_property_id } : {}),
  ...(row.pms_unit_id !== null ? { pms_unit_id: row.pms_unit_id } : {}),
  ...(row.pms_prospect_id !== null ? { pms_prospect_id: row.pms_prospect_id } : {}),
  guarantor_coverage: row.guarantor_coverage,
  ...renterGuaranteeFields(row),
})

export type ProspectEvent = "prospect.created" | "prospect.ready" | "prospect.incomplete"

/**
 * The event as published on `events.<owner_slug>.<event>`: the exact body a webhook delivery sends, with the
 * prospect's property (when resolved) in a header, for providers covering named properties.
 */
export const prospectEvent = (
  event: ProspectEvent,
  slug: string,
  row: ProspectRow,
  urls: EnrollmentUrls = NO_URLS,
): OutboxMessage => {
  const property = row.property_id === null ? null : String(row.property_id)
  return event === "prospect.created"
    ? eventMessage(event, slug, prospectKey(row.id), { id: row.source_prospect_id }, property)
    : eventMessage(event, slug, prospectKey(row.id), thirdPartyProspect(row, urls), property)
}

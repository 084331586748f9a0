import type { Payload } from "../events/Catalog.ts"
import { eventMessage } from "../events/Envelope.ts"
import type { OutboxMessage } from "../platform/Outbox.ts"
import { policyKey } from "./Events.ts"
import { delinquencyId } from "./LifecycleDomain.ts"
import type { DelinquencyRow } from "./DelinquenciesRepo.ts"
import type { MoveOutRow } from "./MoveOutsRepo.ts"

/**
 * `delinquency`: the PMS identifiers of the policy under their `_code` names, each omitted when the policy has
 * none, as is `source_prospect_id`.
 */
export const delinquencyPayload = (row: DelinquencyRow): Payload<"delinquency.created"> => ({
  id: delinquencyId(row.id),
  status: row.status,
  amount_cents: Number(row.amount_cents),
  policy_number: row.policy_number,
  ...(row.pms_property_id !== null ? { pms_property_code: row.pms_property_id } : {}),
  ...(row.pms_unit_id !== null ? { pms_unit_code: row.pms_unit_id } : {}),
  ...(row.pms_resident_id !== null ? { pms_tenant_code: row.pms_resident_id } : {}),
  ...(row.source_prospect_id !== null ? { source_prospect_id: row.source_prospect_id } : {}),
})

/** A delinquency's events share its policy's outbox key, so they follow the policy's own events in order. */
export const delinquencyEvent = (
  event: "delinquency.created" | "delinquency.resolved",
  row: DelinquencyRow,
): OutboxMessage =>
  eventMessage(event, row.owner_slug, policyKey(row.policy_id), delinquencyPayload(row), row.property_id)

export const moveOutInitiated = (slug: string, row: MoveOutRow): OutboxMessage =>
  eventMessage(
    "move_out.initiated",
    slug,
    policyKey(row.policy_id),
    { move_out_id: Number(row.id), external_id: row.external_id, status: row.status },
    row.property_id,
  )

import { Effect } from "effect"
import { decodeFields } from "../platform/Validation.ts"
import { externalIdOf, failed, type BatchRules, type ItemResult, PropertyItem } from "./Domain.ts"
import { applyProperty, type PropertyState } from "./Matching.ts"
import type { RosterRepo } from "./Repo.ts"

const decodeProperty = decodeFields(PropertyItem)

/** What a property result shows of the stored building. */
export const propertyView = (
  externalId: string,
  action: "created" | "updated",
  p: PropertyState,
): ItemResult => ({
  external_system_id: externalId,
  action,
  building_name: p.building_name,
  address: { line_one: p.street, city: p.city, state: p.state, zip: p.zip },
  type: p.type,
  active: p.active,
})

/**
 * A property batch's items matched against the owner's buildings and applied in order (see the spec's rules),
 * under the owner's lock; for a managed owner, only the buildings granted to the client.
 */
export const applyProperties =
  (repo: RosterRepo["Service"], clientId: string): BatchRules =>
  (owner, items) =>
    Effect.gen(function* () {
      const model: Array<PropertyState> = yield* repo.properties(owner.id)
      const accounts = new Map((yield* repo.bankAccounts(owner.id)).map((a) => [a.external_system_id, a.id]))
      const granted = owner.managed_by_service ? yield* repo.grantedBuildings(owner.id, clientId) : undefined
      const touched = new Set<PropertyState>()
      const results = items.map((raw): ItemResult => {
        const decoded = decodeProperty(raw)
        if ("errors" in decoded) return failed(externalIdOf(raw), decoded.errors)
        const item = decoded.value
        const outcome = applyProperty(item, model, accounts, owner, granted)
        if ("errors" in outcome) return failed(item.external_system_id, outcome.errors)
        touched.add(outcome.state)
        return propertyView(item.external_system_id, outcome.created ? "created" : "updated", outcome.state)
      })

      // Only the latest state of each building: one sent twice in a batch is written once, as last applied.
      yield* repo.upsertProperties(
        owner.id,
        model.filter((p) => touched.has(p)),
      )
      return results
    })

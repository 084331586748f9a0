import { Effect } from "effect"
import { decodeFields } from "../platform/Validation.ts"
import { deriveBuildingStreet, normalizeStreetLine } from "./Address.ts"
import { externalIdOf, failed, type BatchRules, type ItemResult, UnitItem } from "./Domain.ts"
import { applyUnit, type UnitState } from "./Matching.ts"
import type { RosterRepo } from "./Repo.ts"

const decodeUnit = decodeFields(UnitItem)

/** The street a building's units' address lines share, or undefined when they share none (or have none). */
const sharedStreet = (lines: ReadonlyArray<string | null | undefined>) => {
  const present = lines.filter((line): line is string => typeof line === "string" && line.trim() !== "")
  return present.length === 0 ? undefined : deriveBuildingStreet(present)
}

/**
 * A unit batch's items applied in order under the owner's lock, each to a building sent before; the streets of
 * the buildings they touch are derived from their units' address lines, except where an operator locked one.
 */
export const applyUnits =
  (repo: RosterRepo["Service"], clientId: string): BatchRules =>
  (owner, items) =>
    Effect.gen(function* () {
      const granted = owner.managed_by_service ? yield* repo.grantedBuildings(owner.id, clientId) : undefined
      const properties = yield* repo.properties(owner.id)
      const byExternalId = new Map(
        properties.filter((p) => p.external_system_id !== null).map((p) => [p.external_system_id!, p]),
      )
      const decoded = items.map((raw) => ({ raw, decoded: decodeUnit(raw) }))
      const referenced = new Set(
        decoded.flatMap(({ decoded }) =>
          "value" in decoded && byExternalId.has(decoded.value.property_external_id)
            ? [byExternalId.get(decoded.value.property_external_id)!.id]
            : [],
        ),
      )
      // Each building's units, and the address lines this batch sends for it, grouped once.
      const unitsOf = new Map<string, Array<UnitState>>([...referenced].map((id) => [id, []]))
      for (const unit of yield* repo.units([...referenced])) unitsOf.get(unit.property_id)!.push(unit)
      const sentLines = new Map<string, Array<string | undefined>>()
      for (const { decoded: d } of decoded) {
        if (!("value" in d)) continue
        const property = byExternalId.get(d.value.property_external_id)
        if (property !== undefined) {
          sentLines.set(property.id, [...(sentLines.get(property.id) ?? []), d.value.address?.line_one])
        }
      }
      const touchedProperties = properties.filter((p) => referenced.has(p.id))

      // The building street is the part its units' addresses share: derive it from every line sent before
      // naming units; what is stored is derived again below from the units as applied.
      const streets = new Map<string, string>()
      for (const property of touchedProperties) {
        const derived = sharedStreet([
          ...unitsOf.get(property.id)!.map((u) => u.line_one),
          ...(sentLines.get(property.id) ?? []),
        ])
        streets.set(property.id, derived === undefined || property.address_locked ? property.street : derived)
      }

      const touched = new Set<UnitState>()
      const results: Array<ItemResult> = []
      for (const { raw, decoded: d } of decoded) {
        if ("errors" in d) {
          results.push(failed(externalIdOf(raw), d.errors))
          continue
        }
        const item = d.value
        const property = byExternalId.get(item.property_external_id)
        if (property === undefined) {
          results.push(
            failed(item.external_system_id, {
              property_external_id: [
                "is not a known property: send the property first (earlier in this request or before)",
              ],
            }),
          )
          continue
        }
        if (
          granted !== undefined &&
          (property.pms_property_id === null || !granted.includes(property.pms_property_id))
        ) {
          results.push(
            failed(item.external_system_id, {
              property_external_id: ["is not a building granted to these credentials"],
            }),
          )
          continue
        }
        const outcome = applyUnit(
          item,
          property,
          streets.get(property.id) ?? property.street,
          unitsOf.get(property.id)!,
        )
        if ("errors" in outcome) {
          results.push(failed(item.external_system_id, outcome.errors))
          continue
        }
        touched.add(outcome.state)
        results.push({
          external_system_id: item.external_system_id,
          action: outcome.created ? "created" : "updated",
          name: outcome.state.name,
          property_external_id: item.property_external_id,
        })
      }

      // A failed item's address counts for nothing: the stored street comes from the units as applied.
      const streetUpdates: Array<{ id: string; street: string; street_key: string }> = []
      const disagreements: Array<{ property_id: string; stored_street: string; derived_street: string }> = []
      for (const property of touchedProperties) {
        const derived = sharedStreet(unitsOf.get(property.id)!.map((u) => u.line_one))
        if (derived === undefined || derived === property.street) continue
        if (property.address_locked) {
          disagreements.push({
            property_id: property.id,
            stored_street: property.street,
            derived_street: derived,
          })
          continue
        }
        streetUpdates.push({
          id: property.id,
          street: derived,
          street_key: normalizeStreetLine(derived).key,
        })
      }
      yield* repo.updatePropertyStreets(streetUpdates)
      yield* repo.recordDisagreements(disagreements)
      for (const disagreement of disagreements) {
        yield* Effect.logWarning("derived building street differs from the locked one").pipe(
          Effect.annotateLogs({ owner: owner.slug, ...disagreement }),
        )
      }
      yield* repo.upsertUnits([...unitsOf.values()].flat().filter((u) => touched.has(u)))
      return results
    })

import {
  normalizeState,
  normalizeStreetLine,
  normalizeZip,
  remainderAfterStreet,
  unitLabelFromLine,
  unitLabelFromLineTwo,
} from "./Address.ts"
import {
  type OwnerRow,
  type PropertyItem,
  type PropertyType,
  SINGLE_UNIT_TYPES,
  type UnitItem,
} from "./Domain.ts"
import type { FieldErrors } from "../platform/Validation.ts"
import type { PropertyRow, UnitRow } from "./PropertiesRepo.ts"

/**
 * The spec's roster rules applied to one item at a time against an owner's roster held in memory: a batch
 * loads the roster once, applies its items in order (a failed item changes nothing), then writes once.
 */

export const sameText = (a: string | null | undefined, b: string | null | undefined) =>
  (a ?? "").trim().toLowerCase() === (b ?? "").trim().toLowerCase()

export interface PropertyState extends Omit<PropertyRow, "id"> {
  readonly id?: string
}

export interface UnitState extends Omit<UnitRow, "id"> {
  readonly id?: string
}

/** The default `policy_holder_name` of an owner's buildings (spec: the owner name followed by `, LLC`). */
export const defaultPolicyHolder = (owner: OwnerRow) => `${owner.name}, LLC`

/** A property item's address, normalized, or its field errors. */
export const normalizedAddress = (address: NonNullable<PropertyItem["address"]>) => {
  const street = normalizeStreetLine(address.line_one)
  const state = normalizeState(address.state)
  const zip = normalizeZip(address.zip)
  const errors: FieldErrors = {}
  if (state === undefined)
    errors["address.state"] = ["is not a US state, territory or military state (two letters or full name)"]
  if (zip === undefined) errors["address.zip"] = ["must be a five-digit ZIP code (ZIP+4 is accepted)"]
  return state === undefined || zip === undefined
    ? { errors }
    : { street, state, zip, city: address.city.trim() }
}

/**
 * One property item against the owner's buildings (mutated in place on success): the spec's matching rules in
 * order — linked identifier, then (pms_type, pms_property_id) with building_name choosing among several, then
 * building_name + normalized street + zip, then create. The item writes only the fields it carries: an update
 * may omit anything but its identifier, while a creation needs `building_name` and `address`; the rule that
 * needs the address runs only for an item that carries one.
 */
export const applyProperty = (
  item: PropertyItem,
  model: Array<PropertyState>,
  accounts: ReadonlyMap<string, string>,
  owner: OwnerRow,
  granted: ReadonlyArray<string> | undefined,
): { readonly errors: FieldErrors } | { readonly state: PropertyState; readonly created: boolean } => {
  const address = item.address === undefined ? undefined : normalizedAddress(item.address)
  const errors: FieldErrors = address !== undefined && "errors" in address ? { ...address.errors } : {}
  const bankAccountId =
    item.bank_account_external_id === undefined || item.bank_account_external_id === null
      ? item.bank_account_external_id
      : accounts.get(item.bank_account_external_id)
  if (bankAccountId === undefined && typeof item.bank_account_external_id === "string") {
    errors.bank_account_external_id = ["is not a registered bank account of this owner: register it first"]
  }
  if (Object.keys(errors).length > 0) return { errors }
  const sent = address !== undefined && !("errors" in address) ? address : undefined

  let target = model.find((p) => p.external_system_id === item.external_system_id)
  if (target === undefined && item.pms_type && item.pms_property_id) {
    const samePms = model.filter(
      (p) => p.pms_type === item.pms_type && p.pms_property_id === item.pms_property_id,
    )
    if (samePms.length > 1 && item.building_name === undefined) {
      return {
        errors: {
          building_name: [`is required to choose among the ${samePms.length} buildings of this PMS property`],
        },
      }
    }
    const candidates =
      samePms.length > 1 ? samePms.filter((p) => sameText(p.building_name, item.building_name)) : samePms
    if (candidates.length > 1) {
      return {
        errors: {
          building_name: [
            `matches ${candidates.length} buildings of this PMS property; nothing separates them`,
          ],
        },
      }
    }
    target = candidates[0]
  }
  if (target === undefined && sent !== undefined && item.building_name !== undefined) {
    const candidates = model.filter(
      (p) =>
        sameText(p.building_name, item.building_name) &&
        p.street_key === sent.street.key &&
        p.zip === sent.zip,
    )
    if (candidates.length > 1) {
      return {
        errors: {
          building_name: [`matches ${candidates.length} buildings at this address; nothing separates them`],
        },
      }
    }
    target = candidates[0]
  }
  if (
    target !== undefined &&
    target.external_system_id !== null &&
    target.external_system_id !== item.external_system_id
  ) {
    return {
      errors: {
        external_system_id: [
          `the matching building is already linked to ${target.external_system_id}: one building, one identifier (the service corrects identifier changes)`,
        ],
      },
    }
  }
  const pmsPropertyId = item.pms_property_id === undefined ? target?.pms_property_id : item.pms_property_id
  if (
    granted !== undefined &&
    (pmsPropertyId === null || pmsPropertyId === undefined || !granted.includes(pmsPropertyId))
  ) {
    return { errors: { pms_property_id: ["is not a building granted to these credentials"] } }
  }
  if (target === undefined && (item.building_name === undefined || sent === undefined)) {
    return {
      errors: {
        ...(item.building_name === undefined ? { building_name: ["is required"] } : {}),
        ...(sent === undefined ? { address: ["is required"] } : {}),
      },
    }
  }

  const base: PropertyState = target ?? {
    external_system_id: null,
    building_name: item.building_name!,
    street_key: sent!.street.key,
    street: sent!.street.display,
    city: sent!.city,
    state: sent!.state,
    zip: sent!.zip,
    type: "multifamily",
    policy_holder_name: null,
    pms_type: null,
    pms_property_id: null,
    default_coverage_type: "multiplier",
    default_coverage_value: "1",
    bank_account_id: null,
    active: true,
    // Renter guarantee comes with creation by this endpoint only, never to a matched building.
    renter_guarantee_enabled: owner.guarantor_coverage_capable,
    street_derived: false,
    address_locked: false,
  }
  const next: PropertyState = {
    ...base,
    external_system_id: item.external_system_id,
    building_name: item.building_name ?? base.building_name,
    ...(base.address_locked || sent === undefined
      ? {}
      : {
          // Once units derived the street, the seed sent again does not replace it.
          ...(base.street_derived ? {} : { street_key: sent.street.key, street: sent.street.display }),
          city: sent.city,
          state: sent.state,
          zip: sent.zip,
        }),
    type: (item.type as PropertyType | undefined) ?? base.type,
    // Omitted keeps what is stored; `null` restores the default, which a building without one also gets.
    policy_holder_name:
      (item.policy_holder_name === undefined ? base.policy_holder_name : item.policy_holder_name) ??
      defaultPolicyHolder(owner),
    pms_type: item.pms_type === undefined ? base.pms_type : item.pms_type,
    pms_property_id: item.pms_property_id === undefined ? base.pms_property_id : item.pms_property_id,
    ...(item.default_coverage === undefined
      ? {}
      : item.default_coverage === null
        ? { default_coverage_type: "multiplier", default_coverage_value: "1" }
        : {
            default_coverage_type: item.default_coverage.type,
            default_coverage_value: String(item.default_coverage.value),
          }),
    bank_account_id: bankAccountId === undefined ? base.bank_account_id : bankAccountId,
    active: item.active ?? base.active,
  }
  if (target === undefined) model.push(next)
  else model[model.indexOf(target)] = next
  return { state: next, created: target === undefined }
}

/** A unit's label derived from its address and PMS code, in the spec's order; undefined when none is. */
const deriveUnitName = (
  lineOne: string | null | undefined,
  lineTwo: string | null | undefined,
  pmsUnitId: string | null | undefined,
  buildingStreet: string,
) =>
  (lineOne && (unitLabelFromLine(lineOne) ?? remainderAfterStreet(lineOne, buildingStreet))) ||
  (lineTwo && unitLabelFromLineTwo(lineTwo)) ||
  pmsUnitId ||
  undefined

/**
 * One unit item within its building (`siblings`, its units, mutated on success): matched by linked identifier, then
 * `pms_unit_id`, then name ignoring case; its name sent, or derived in the spec's order. An update writes only the
 * fields it carries: a name the partner sent stays until it sends another (or `null`), while a derived one follows
 * the unit's address as stored after the update.
 */
export const applyUnit = (
  item: UnitItem,
  property: PropertyRow,
  buildingStreet: string,
  siblings: Array<UnitState>,
): { readonly errors: FieldErrors } | { readonly state: UnitState; readonly created: boolean } => {
  const address = item.address ?? undefined
  const single = SINGLE_UNIT_TYPES.includes(property.type as PropertyType)
  const derivedFromItem = deriveUnitName(
    address?.line_one,
    address?.line_two,
    item.pms_unit_id,
    buildingStreet,
  )

  let target = siblings.find((u) => u.external_system_id === item.external_system_id)
  if (target === undefined && item.pms_unit_id)
    target = siblings.find((u) => u.pms_unit_id === item.pms_unit_id)
  // A single-unit building's unit is named 1 by default, so an item without a name matches it by that name.
  const nameForMatch = item.name ?? derivedFromItem ?? (single ? "1" : undefined)
  if (target === undefined && nameForMatch) target = siblings.find((u) => sameText(u.name, nameForMatch))
  const linkedElsewhere =
    target !== undefined &&
    target.external_system_id !== null &&
    target.external_system_id !== item.external_system_id
  // In a single-unit building, an item that is not its one unit is a second unit, whatever it matched.
  if (single && siblings.length > 0 && (target === undefined || linkedElsewhere)) {
    return {
      errors: {
        property_external_id: [
          `a ${property.type} building holds exactly one unit, and this one has it already`,
        ],
      },
    }
  }
  if (linkedElsewhere) {
    return {
      errors: {
        external_system_id: [
          `the unit named ${target!.name} is already linked to ${target!.external_system_id}`,
        ],
      },
    }
  }

  const base: UnitState = target ?? {
    property_id: property.id,
    external_system_id: null,
    name: "",
    name_derived: true,
    line_one: null,
    line_two: null,
    city: null,
    state: null,
    zip: null,
    pms_unit_id: null,
    default_coverage_type: null,
    default_coverage_value: null,
  }
  const merged: UnitState = {
    ...base,
    external_system_id: item.external_system_id,
    ...(item.address === undefined
      ? {}
      : item.address === null
        ? { line_one: null, line_two: null, city: null, state: null, zip: null }
        : {
            line_one: item.address.line_one ?? base.line_one,
            line_two: item.address.line_two === undefined ? base.line_two : item.address.line_two,
            city: item.address.city ?? base.city,
            state: item.address.state ?? base.state,
            zip: item.address.zip === undefined ? base.zip : String(item.address.zip),
          }),
    pms_unit_id: item.pms_unit_id === undefined ? base.pms_unit_id : item.pms_unit_id,
    ...(item.default_coverage === undefined
      ? {}
      : item.default_coverage === null
        ? { default_coverage_type: null, default_coverage_value: null }
        : {
            default_coverage_type: item.default_coverage.type,
            default_coverage_value: String(item.default_coverage.value),
          }),
  }
  const keepsSentName = target !== undefined && !target.name_derived && item.name === undefined
  const name =
    item.name ??
    (keepsSentName
      ? target!.name
      : (deriveUnitName(merged.line_one, merged.line_two, merged.pms_unit_id, buildingStreet) ??
        target?.name ??
        (single ? "1" : undefined)))
  if (name === undefined) return { errors: { name: ["unit name required and not derivable"] } }
  const next: UnitState = { ...merged, name, name_derived: typeof item.name !== "string" && !keepsSentName }
  if (target === undefined) siblings.push(next)
  else siblings[siblings.indexOf(target)] = next
  return { state: next, created: target === undefined }
}

import { Effect } from "effect"
import { Db } from "../platform/Db.ts"
import { Outbox } from "../platform/Outbox.ts"
import { decodeFields, type FieldErrors } from "../platform/Validation.ts"
import { AddressCorrectionRejected, type OwnerRow, PropertyAddress } from "./Domain.ts"
import { rosterEvents } from "./Events.ts"
import { normalizedAddress } from "./Matching.ts"
import { propertyView } from "./Properties.ts"
import { RosterRepo } from "./Repo.ts"

const decodeAddress = decodeFields(PropertyAddress)

/** Field errors as one line for an operator: `city is required; zip must be ...`. */
const problemsOf = (errors: FieldErrors) =>
  Object.entries(errors)
    .map(([field, messages]) => `${field} ${messages.join("; ")}`)
    .join("; ")

/** Operators' corrections of a building's address; `lockedOwner` serializes one with its owner's batches. */
export const makeAddressCorrections = <E>(lockedOwner: (slug: string) => Effect.Effect<OwnerRow, E>) =>
  Effect.gen(function* () {
    const repo = yield* RosterRepo
    const db = yield* Db
    const outbox = yield* Outbox

    /**
     * Operators: corrects a building's address (`properties set-address`). The address is normalized as a partner's
     * would be and locked: derivation from the units stops, and a partner's address on a later upsert no longer
     * replaces it (disagreements are logged). Audited, and published like any roster change.
     */
    const correctAddress = Effect.fn("Roster.correctAddress")(function* (
      slug: string,
      externalId: string,
      file: unknown,
      actor: string,
    ) {
      const decoded = decodeAddress(file)
      if ("errors" in decoded) {
        return yield* new AddressCorrectionRejected({ message: problemsOf(decoded.errors) })
      }
      const address = normalizedAddress(decoded.value)
      if ("errors" in address) {
        return yield* new AddressCorrectionRejected({ message: problemsOf(address.errors) })
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          const found = yield* repo.ownerBySlug(slug)
          if (found === undefined)
            return yield* new AddressCorrectionRejected({ message: `no owner ${slug}` })
          const owner = yield* lockedOwner(slug)
          const property = (yield* repo.properties(owner.id)).find((p) => p.external_system_id === externalId)
          if (property === undefined) {
            return yield* new AddressCorrectionRejected({
              message: `owner ${slug} has no property with external_system_id ${externalId}`,
            })
          }
          const corrected = {
            street: address.street.display,
            street_key: address.street.key,
            city: address.city,
            state: address.state,
            zip: address.zip,
          }
          yield* repo.correctAddress(property.id, corrected)
          const shown = (p: { street: string; city: string; state: string; zip: string }) => ({
            line_one: p.street,
            city: p.city,
            state: p.state,
            zip: p.zip,
          })
          yield* repo.audit({
            actor,
            action: "property.set_address",
            target: `property:${slug}/${externalId}`,
            details: { before: shown(property), after: shown(corrected) },
            before: shown(property),
            after: shown(corrected),
          })
          const view = propertyView(externalId, "updated", {
            ...property,
            ...corrected,
            address_locked: true,
          })
          yield* outbox.enqueue(rosterEvents(slug, "property", [view]))
          return { owner_slug: slug, ...view, address_locked: true }
        }),
      )
    })

    return { correctAddress }
  })

import { Context, Effect, Layer } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { Forbidden } from "../platform/Http.ts"
import { Outbox, type OutboxMessage } from "../platform/Outbox.ts"
import { decodeFields, type FieldErrors } from "../platform/Validation.ts"
import { deriveBuildingStreet, normalizeStreetLine } from "./Address.ts"
import {
  AddressCorrectionRejected,
  BankAccountItem,
  BatchRejected,
  failed,
  type ItemResult,
  MAX_BATCH,
  OwnerInvalid,
  OwnerManagedByService,
  OwnerNotManaged,
  type OwnerRow,
  type PropertyOwner,
  type PropertyOwnerInput,
  PropertyAddress,
  PropertyItem,
  UnitItem,
} from "./Domain.ts"
import {
  applyProperty,
  applyUnit,
  normalizedAddress,
  type PropertyState,
  type UnitState,
} from "./Matching.ts"
import { RosterRepo } from "./Repo.ts"

const decodeBankAccount = decodeFields(BankAccountItem)
const decodeProperty = decodeFields(PropertyItem)
const decodeUnit = decodeFields(UnitItem)
const decodeAddress = decodeFields(PropertyAddress)

/** Field errors as one line for an operator: `city is required; zip must be ...`. */
const problemsOf = (errors: FieldErrors) =>
  Object.entries(errors)
    .map(([field, messages]) => `${field} ${messages.join("; ")}`)
    .join("; ")

/** The partner's identifier of an item, even of one that does not decode, for its result. */
const externalIdOf = (item: unknown) =>
  typeof item === "object" &&
  item !== null &&
  typeof (item as { external_system_id?: unknown }).external_system_id === "string"
    ? (item as { external_system_id: string }).external_system_id
    : ""

const batchOf = (body: unknown) =>
  !Array.isArray(body)
    ? Effect.fail(
        new BatchRejected({ message: "The body must be a JSON array of items (even for one item)." }),
      )
    : body.length > MAX_BATCH
      ? Effect.fail(
          new BatchRejected({
            message: `A batch holds at most ${MAX_BATCH} items; this one has ${body.length}. Nothing was processed.`,
          }),
        )
      : Effect.succeed(body as ReadonlyArray<unknown>)

/** `acme-properties` from "Acme Properties, Inc.": readable, stable, URL-safe. */
const slugify = (name: string) =>
  name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48)
    .replace(/-+$/, "") || "owner"

const meta = (results: ReadonlyArray<ItemResult>) => ({
  created: results.filter((r) => r.action === "created").length,
  updated: results.filter((r) => r.action === "updated").length,
  failed: results.filter((r) => r.action === "failed").length,
})

type Kind = "owner" | "bank_account" | "property" | "unit"

/** `roster.<owner_slug>.<kind>.<created|updated>`, one per applied item, keyed by owner so they stay in order. */
const rosterEvents = (slug: string, kind: Kind, results: ReadonlyArray<ItemResult>): Array<OutboxMessage> =>
  results
    .filter((r) => r.action !== "failed")
    .map((r) => ({ subject: `roster.${slug}.${kind}.${r.action}`, key: slug, payload: r }))

/** A bank account as a batch leaves it; `sealed` undefined keeps the stored account number. */
interface AccountWrite {
  readonly external_system_id: string
  readonly display_name: string
  readonly routing_number: string
  readonly account_number_last4: string
  readonly sealed: Buffer | undefined
}

/** The street a building's units' address lines share, or undefined when they share none (or have none). */
const sharedStreet = (lines: ReadonlyArray<string | null | undefined>) => {
  const present = lines.filter((line): line is string => typeof line === "string" && line.trim() !== "")
  return present.length === 0 ? undefined : deriveBuildingStreet(present)
}

export class Roster extends Context.Service<Roster>()("partner-service/roster/Roster", {
  make: Effect.gen(function* () {
    const repo = yield* RosterRepo
    const db = yield* Db
    const outbox = yield* Outbox
    const crypto = yield* Crypto

    const ownerView = (owner: OwnerRow, defaultAccountExternalId: string | null): PropertyOwner => ({
      external_org_id: owner.external_org_id ?? "",
      owner_slug: owner.slug,
      name: owner.name,
      purchase_flow_enabled: owner.purchase_flow_enabled,
      active: owner.purchase_flow_enabled,
      max_coverage_amount_cents:
        owner.max_coverage_amount_cents === null ? null : Number(owner.max_coverage_amount_cents),
      embedded_frame_ancestors: owner.embedded_frame_ancestors,
      guarantor_coverage_capable: owner.guarantor_coverage_capable,
      default_bank_account_external_id: defaultAccountExternalId,
    })

    const defaultAccountExternalId = (owner: OwnerRow) =>
      owner.default_bank_account_id === null
        ? Effect.succeed(null)
        : repo
            .bankAccounts(owner.id)
            .pipe(
              Effect.map(
                (accounts) =>
                  accounts.find((a) => a.id === owner.default_bank_account_id)?.external_system_id ?? null,
              ),
            )

    /** Inside the transaction that inserts the owner: the slug lock is held until it commits. */
    const uniqueSlug = (name: string) =>
      Effect.gen(function* () {
        const base = slugify(name)
        yield* repo.lockSlug(base)
        const taken = yield* repo.slugsLike(base)
        let slug = base
        for (let n = 2; taken.has(slug); n++) slug = `${base}-${n}`
        return slug
      })

    /**
     * `POST /partners/property_owners`: an upsert on `external_org_id`. A new owner starts with the purchase flow
     * off and is granted to the client that created it; an existing one may be updated only by a client it is
     * granted to.
     */
    const upsertOwner = Effect.fn("Roster.upsertOwner")(function* (
      clientId: string,
      input: PropertyOwnerInput,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lockExternalOrgId(input.external_org_id)
          const existing = yield* repo.ownerByExternalOrgId(input.external_org_id)
          if (existing?.managed_by_service) {
            return yield* new OwnerManagedByService({ externalOrgId: input.external_org_id })
          }
          if (existing === undefined) {
            if (input.name === undefined) {
              return yield* new OwnerInvalid({ fields: { name: "is required when the owner is created" } })
            }
            const owner = yield* repo.insertOwner({
              slug: yield* uniqueSlug(input.name),
              name: input.name,
              external_org_id: input.external_org_id,
              managed_by_service: false,
              max_coverage_amount_cents: input.max_coverage_amount_cents ?? null,
              embedded_frame_ancestors: input.embedded_frame_ancestors ?? [],
              guarantor_coverage_capable: input.guarantor_coverage_capable ?? false,
            })
            yield* repo.grant(owner.id, clientId, null)
            const view = ownerView(owner, null)
            yield* outbox.enqueue(
              rosterEvents(owner.slug, "owner", [
                { external_system_id: owner.external_org_id!, action: "created", ...view },
              ]),
            )
            return { created: true, owner: view }
          }
          if (!(yield* isGranted(existing.id, clientId))) return yield* new Forbidden()
          const updated: OwnerRow = {
            ...existing,
            name: input.name ?? existing.name,
            purchase_flow_enabled: input.purchase_flow_enabled ?? existing.purchase_flow_enabled,
            max_coverage_amount_cents:
              input.max_coverage_amount_cents === undefined
                ? existing.max_coverage_amount_cents
                : input.max_coverage_amount_cents === null
                  ? null
                  : String(input.max_coverage_amount_cents),
            // Replaces the whole array when present; `null` empties it.
            embedded_frame_ancestors:
              input.embedded_frame_ancestors === undefined
                ? existing.embedded_frame_ancestors
                : [...(input.embedded_frame_ancestors ?? [])],
            guarantor_coverage_capable:
              input.guarantor_coverage_capable ?? existing.guarantor_coverage_capable,
          }
          yield* repo.updateOwner(updated)
          const view = ownerView(updated, yield* defaultAccountExternalId(updated))
          yield* outbox.enqueue(
            rosterEvents(updated.slug, "owner", [
              { external_system_id: updated.external_org_id!, action: "updated", ...view },
            ]),
          )
          return { created: false, owner: view }
        }),
      )
    })

    const isGranted = (ownerId: string, clientId: string) =>
      db
        .query(
          (sql) => sql<Array<{ one: number }>>`
            select 1 as one from client_owner_grants where owner_id = ${ownerId} and client_id = ${clientId}`,
        )
        .pipe(Effect.map((rows) => rows.length > 0))

    /** Loads the owner of a slug the gateway already resolved, and serializes this batch with others of its owner. */
    const lockedOwner = (slug: string) =>
      Effect.gen(function* () {
        const owner = yield* repo.ownerBySlug(slug)
        if (owner === undefined) return yield* Effect.die(new Error(`owner ${slug} vanished`))
        yield* repo.lockOwner(owner.id)
        return (yield* repo.ownerBySlug(slug))!
      })

    /**
     * What every roster batch does around its own rules: refuse a batch that is not an array of at most 500,
     * apply `items` under the owner's lock in one transaction, publish a `roster.*` message per applied item.
     */
    const rosterBatch = <E>(
      slug: string,
      kind: Kind,
      body: unknown,
      apply: (owner: OwnerRow, items: ReadonlyArray<unknown>) => Effect.Effect<Array<ItemResult>, E>,
    ) =>
      Effect.gen(function* () {
        const items = yield* batchOf(body)
        return yield* db.transaction(
          Effect.gen(function* () {
            const owner = yield* lockedOwner(slug)
            const results = yield* apply(owner, items)
            yield* outbox.enqueue(rosterEvents(owner.slug, kind, results))
            return { results, meta: meta(results) }
          }),
        )
      })

    /**
     * `POST /partners/{owner_slug}/bank_accounts`. An item writes only the fields it carries: creating an account
     * needs `display_name`, `routing_number` and `account_number`; an update may omit any of them.
     */
    const upsertBankAccounts = Effect.fn("Roster.upsertBankAccounts")(function* (
      slug: string,
      body: unknown,
    ) {
      return yield* rosterBatch(slug, "bank_account", body, (owner, items) =>
        Effect.gen(function* () {
          const stored = yield* repo.bankAccounts(owner.id)
          const byExternalId = new Map(stored.map((a) => [a.external_system_id, a]))
          let defaultExternalId = stored.find(
            (a) => a.id === owner.default_bank_account_id,
          )?.external_system_id
          // Each identifier's account as this batch leaves it; the last item of each identifier wins, and earlier
          // ones of it report as updates of it. `sealed` undefined keeps the stored account number.
          const pending = new Map<string, AccountWrite>()
          const results: Array<ItemResult> = []
          for (const raw of items) {
            const decoded = decodeBankAccount(raw)
            if ("errors" in decoded) {
              results.push(failed(externalIdOf(raw), decoded.errors))
              continue
            }
            const item = decoded.value
            const base = pending.get(item.external_system_id) ?? byExternalId.get(item.external_system_id)
            if (base === undefined) {
              const missing = (["display_name", "routing_number", "account_number"] as const).filter(
                (field) => item[field] === undefined,
              )
              if (missing.length > 0) {
                results.push(
                  failed(
                    item.external_system_id,
                    Object.fromEntries(missing.map((f) => [f, ["is required"]])),
                  ),
                )
                continue
              }
            }
            if (item.default === false && defaultExternalId === item.external_system_id) {
              results.push(
                failed(item.external_system_id, {
                  default: [
                    "can't be false on the owner's default account: set default on another account to move it",
                  ],
                }),
              )
              continue
            }
            const sealed =
              item.account_number === undefined
                ? (pending.get(item.external_system_id)?.sealed ?? undefined)
                : yield* crypto.seal(new TextEncoder().encode(item.account_number))
            pending.set(item.external_system_id, {
              external_system_id: item.external_system_id,
              display_name: item.display_name ?? base!.display_name,
              routing_number: item.routing_number ?? base!.routing_number,
              account_number_last4: item.account_number?.slice(-4) ?? base!.account_number_last4,
              sealed,
            })
            // The owner's first account becomes the default; `default: true` moves it.
            if (item.default === true || defaultExternalId === undefined)
              defaultExternalId = item.external_system_id
            results.push({
              external_system_id: item.external_system_id,
              action: base === undefined ? "created" : "updated",
            })
          }

          const rows = [...pending.values()]
          const inserted = yield* repo.insertBankAccounts(
            owner.id,
            rows
              .filter((r) => !byExternalId.has(r.external_system_id))
              .map(({ sealed, ...r }) => ({ ...r, account_number_sealed: sealed! })),
          )
          yield* repo.updateBankAccounts(
            rows
              .filter((r) => byExternalId.has(r.external_system_id))
              .map(({ external_system_id, sealed, ...r }) => ({
                ...r,
                account_number_sealed: sealed,
                id: byExternalId.get(external_system_id)!.id,
              })),
          )
          const idOf = (externalId: string) =>
            byExternalId.get(externalId)?.id ??
            inserted.find((r) => r.external_system_id === externalId)?.id ??
            null
          const defaultId = defaultExternalId === undefined ? null : idOf(defaultExternalId)
          if (defaultId !== owner.default_bank_account_id) {
            yield* repo.updateOwner({ ...owner, default_bank_account_id: defaultId })
          }
          return results.map((result) => {
            if (result.action === "failed") return result
            const account = pending.get(result.external_system_id)!
            return {
              ...result,
              display_name: account.display_name,
              routing_number: account.routing_number,
              account_number_last4: account.account_number_last4,
              default: result.external_system_id === defaultExternalId,
            }
          })
        }),
      )
    })

    /** What a property result shows of the stored building. */
    const propertyView = (
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

    /** `POST /partners/{owner_slug}/properties`: each item matched and applied in order (see the spec's rules). */
    const upsertProperties = Effect.fn("Roster.upsertProperties")(function* (
      slug: string,
      clientId: string,
      body: unknown,
    ) {
      return yield* rosterBatch(slug, "property", body, (owner, items) =>
        Effect.gen(function* () {
          const model: Array<PropertyState> = yield* repo.properties(owner.id)
          const accounts = new Map(
            (yield* repo.bankAccounts(owner.id)).map((a) => [a.external_system_id, a.id]),
          )
          const granted = owner.managed_by_service
            ? yield* repo.grantedBuildings(owner.id, clientId)
            : undefined
          const touched = new Set<PropertyState>()
          const results: Array<ItemResult> = []

          for (const raw of items) {
            const decoded = decodeProperty(raw)
            if ("errors" in decoded) {
              results.push(failed(externalIdOf(raw), decoded.errors))
              continue
            }
            const item = decoded.value
            const outcome = applyProperty(item, model, accounts, owner, granted)
            if ("errors" in outcome) {
              results.push(failed(item.external_system_id, outcome.errors))
              continue
            }
            touched.add(outcome.state)
            results.push(
              propertyView(item.external_system_id, outcome.created ? "created" : "updated", outcome.state),
            )
          }

          // Only the latest state of each building: one sent twice in a batch is written once, as last applied.
          yield* repo.upsertProperties(
            owner.id,
            model.filter((p) => touched.has(p)),
          )
          return results
        }),
      )
    })

    /** `POST /partners/{owner_slug}/units`: buildings' streets derived first, then each item in order. */
    const upsertUnits = Effect.fn("Roster.upsertUnits")(function* (
      slug: string,
      clientId: string,
      body: unknown,
    ) {
      return yield* rosterBatch(slug, "unit", body, (owner, items) =>
        Effect.gen(function* () {
          const granted = owner.managed_by_service
            ? yield* repo.grantedBuildings(owner.id, clientId)
            : undefined
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
            streets.set(
              property.id,
              derived === undefined || property.address_locked ? property.street : derived,
            )
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
          const disagreements: Array<{ property_id: string; stored_street: string; derived_street: string }> =
            []
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
        }),
      )
    })

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

    /** Operators: an owner with an existing relationship (its purchase flow and coverage stay service-owned). */
    const createManagedOwner = Effect.fn("Roster.createManagedOwner")(function* (
      name: string,
      externalOrgId: string,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lockExternalOrgId(externalOrgId)
          const existing = yield* repo.ownerByExternalOrgId(externalOrgId)
          if (existing !== undefined && !existing.managed_by_service) {
            return yield* new OwnerNotManaged({ externalOrgId, slug: existing.slug })
          }
          if (existing !== undefined) return existing
          const owner = yield* repo.insertOwner({
            slug: yield* uniqueSlug(name),
            name,
            external_org_id: externalOrgId,
            managed_by_service: true,
            max_coverage_amount_cents: null,
            embedded_frame_ancestors: [],
            guarantor_coverage_capable: false,
          })
          yield* repo.updateOwner({ ...owner, purchase_flow_enabled: true })
          return owner
        }),
      )
    })

    return {
      upsertOwner,
      upsertBankAccounts,
      upsertProperties,
      upsertUnits,
      createManagedOwner,
      correctAddress,
      /** Operators: grant an owner, or only the named buildings (PMS property ids) of it, to a client. */
      grantOwner: (ownerId: string, clientId: string, buildings: ReadonlyArray<string> | null) =>
        repo.grant(ownerId, clientId, buildings),
      ownerBySlug: repo.ownerBySlug,
      /**
       * For each (client, PMS property id) asked, the owners granted to the client that have a building with that
       * id, by slug; keyed `JSON.stringify([clientId, pmsPropertyId])`.
       */
      ownersWithProperties: repo.ownersWithProperties,
      /** The PMS property ids of a managed owner granted to a client; undefined when every building is. */
      grantedBuildings: repo.grantedBuildings,
    }
  }),
}) {
  static readonly layer = Layer.effect(Roster, Roster.make).pipe(
    Layer.provide(RosterRepo.layer),
    Layer.provide(Crypto.layer),
  )
}

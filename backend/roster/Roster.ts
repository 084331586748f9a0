import { Context, Effect, Layer } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { Forbidden } from "../platform/Http.ts"
import { Outbox, type OutboxMessage } from "../platform/Outbox.ts"
import { decodeFields, type FieldErrors } from "../platform/Validation.ts"
import { applyBankAccounts } from "./BankAccounts.ts"
import {
  AddressCorrectionRejected,
  BatchRejected,
  type BatchRules,
  type ItemResult,
  MAX_BATCH,
  OwnerInvalid,
  OwnerManagedByService,
  OwnerNotManaged,
  type OwnerRow,
  type PropertyOwner,
  type PropertyOwnerInput,
  PropertyAddress,
} from "./Domain.ts"
import { normalizedAddress } from "./Matching.ts"
import { applyProperties, propertyView } from "./Properties.ts"
import { RosterRepo } from "./Repo.ts"
import { applyUnits } from "./Units.ts"

const decodeAddress = decodeFields(PropertyAddress)

/** Field errors as one line for an operator: `city is required; zip must be ...`. */
const problemsOf = (errors: FieldErrors) =>
  Object.entries(errors)
    .map(([field, messages]) => `${field} ${messages.join("; ")}`)
    .join("; ")

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
    const rosterBatch = (slug: string, kind: Kind, body: unknown, apply: BatchRules) =>
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
      return yield* rosterBatch(slug, "bank_account", body, applyBankAccounts(repo, crypto))
    })

    /** `POST /partners/{owner_slug}/properties`: each item matched and applied in order (see the spec's rules). */
    const upsertProperties = Effect.fn("Roster.upsertProperties")(function* (
      slug: string,
      clientId: string,
      body: unknown,
    ) {
      return yield* rosterBatch(slug, "property", body, applyProperties(repo, clientId))
    })

    /** `POST /partners/{owner_slug}/units`: buildings' streets derived first, then each item in order. */
    const upsertUnits = Effect.fn("Roster.upsertUnits")(function* (
      slug: string,
      clientId: string,
      body: unknown,
    ) {
      return yield* rosterBatch(slug, "unit", body, applyUnits(repo, clientId))
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

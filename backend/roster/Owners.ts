import { Effect } from "effect"
import { Db } from "../platform/Db.ts"
import { Forbidden } from "../platform/Http.ts"
import { Outbox } from "../platform/Outbox.ts"
import {
  OwnerInvalid,
  OwnerManagedByService,
  OwnerNotManaged,
  type OwnerRow,
  type PropertyOwner,
  type PropertyOwnerInput,
} from "./Domain.ts"
import { rosterEvents } from "./Events.ts"
import { RosterRepo } from "./Repo.ts"

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

/** Owners: a partner's upsert of its property owners, and the operators' managed owners. */
export const makeOwners = Effect.gen(function* () {
  const repo = yield* RosterRepo
  const db = yield* Db
  const outbox = yield* Outbox

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
    brand_name: owner.brand_name,
    brand_logo_url: owner.brand_logo_url,
    brand_accent_color: owner.brand_accent_color,
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
            brand_name: input.brand_name ?? null,
            brand_logo_url: input.brand_logo_url ?? null,
            brand_accent_color: input.brand_accent_color ?? null,
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
          guarantor_coverage_capable: input.guarantor_coverage_capable ?? existing.guarantor_coverage_capable,
          brand_name: input.brand_name === undefined ? existing.brand_name : input.brand_name,
          brand_logo_url: input.brand_logo_url === undefined ? existing.brand_logo_url : input.brand_logo_url,
          brand_accent_color:
            input.brand_accent_color === undefined ? existing.brand_accent_color : input.brand_accent_color,
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
          brand_name: null,
          brand_logo_url: null,
          brand_accent_color: null,
        })
        yield* repo.updateOwner({ ...owner, purchase_flow_enabled: true })
        return owner
      }),
    )
  })

  return { upsertOwner, createManagedOwner }
})

import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Crypto } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import type { Caller } from "../platform/Http.ts"
import { Outbox } from "../platform/Outbox.ts"
import { isJsonObject } from "../platform/Validation.ts"
import { externalIdOf, failed, type ItemResult, type OwnerRow } from "../roster/Domain.ts"
import { Roster } from "../roster/Roster.ts"
import { type ProspectFields, ProspectIncomplete, ProspectNotFound, type Source } from "./Domain.ts"
import { eligibilityRequested } from "./Events.ts"
import {
  isStale,
  mergeProspect,
  ownerConflict,
  reference,
  sealedSsnOf,
  undecided,
  validate,
  writeMessages,
} from "./Merge.ts"
import { enrollmentSummaryOf, type ProspectRow, ProspectsRepo, type ProspectWrite } from "./Repo.ts"
import { missingFields, prospectView } from "./View.ts"
import { Sources, UnknownSource } from "./Sources.ts"

/** A partner's prospect POST as its route decoded it. */
export interface ProspectPost {
  readonly input: ProspectFields
  /** `property` and `unit` items to apply through the roster first, each judged by its batch's rules. */
  readonly nested: { readonly property?: unknown; readonly unit?: unknown }
}

export interface SaveRequest extends ProspectPost {
  readonly owner: OwnerRow
  readonly source: Source
  readonly caller: Caller
  /** An inbound event's time: one older than the newest applied to the prospect changes nothing. */
  readonly occurredAt?: Date
}

/**
 * A prospect one at a time: the partner's `POST` and `GET` of a prospect, and the operators' look and recheck.
 * Inbound events' batches, decisions, the journey's write-backs and staging resets have their own services.
 */
export class Prospects extends Context.Service<Prospects>()("partner-service/prospects/Prospects", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* ProspectsRepo
    const sources = yield* Sources
    const roster = yield* Roster
    const outbox = yield* Outbox
    const crypto = yield* Crypto
    const config = yield* AppConfig

    /** A nested `property` or `unit`, applied by the roster's own rules as a batch of one. */
    const nestedItem = (
      raw: unknown,
      scope: string,
      caller: Caller,
      apply: () => Effect.Effect<{ readonly results: ReadonlyArray<ItemResult> }, unknown>,
    ) =>
      Effect.gen(function* () {
        if (!caller.scopes.has(scope)) {
          return failed(externalIdOf(raw), { base: [`needs a token with the ${scope} scope`] })
        }
        const { results } = yield* apply().pipe(Effect.orDie)
        return results[0]!
      })

    /**
     * The building and unit the prospect's references name on the owner's roster now, if exactly one each; for
     * a client granted only named buildings of a managed owner, only those.
     */
    const resolve = (ownerId: string, row: ProspectWrite, grantedTo: string | null) =>
      repo.resolveAll([{ ownerId, grantedTo, row }]).pipe(Effect.map(([resolved]) => resolved!))

    /**
     * Writes a validated prospect for `owner` under the prospect's lock: its nested roster items, the merge with
     * the stored record, the move to `processing` (complete) or `incomplete`, and its events and eligibility
     * request, all in the caller's transaction (or a new one). An inbound event older than the newest one applied
     * changes nothing (`stale`).
     */
    const save = Effect.fn("Prospects.save")(function* (request: SaveRequest) {
      const { owner, source, input, nested, caller } = request
      const slug = owner.slug
      const sealedSsn = yield* sealedSsnOf(crypto, input)
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lock(input.source, input.source_prospect_id)
          const existing = yield* repo.find(input.source, input.source_prospect_id)
          const conflict = ownerConflict(existing, owner)
          if (conflict !== undefined) return yield* conflict
          if (existing !== undefined && isStale(existing, request.occurredAt)) {
            return { stale: true as const, id: existing.id }
          }

          const property =
            nested.property === undefined
              ? undefined
              : yield* nestedItem(nested.property, "properties:write", caller, () =>
                  roster.upsertProperties(slug, caller.clientId, [nested.property]),
                )
          // A nested unit belongs to the prospect's building unless it names another, however that is named.
          const pmsPropertyId =
            input.pms_property_id !== undefined ? input.pms_property_id : (existing?.pms_property_id ?? null)
          const unitsProperty =
            reference(input.property_external_id, property, existing?.property_external_id) ??
            (pmsPropertyId === null || nested.unit === undefined
              ? null
              : ((yield* repo.resolveProperty(owner.id, { externalId: null, pmsPropertyId }))
                  ?.external_system_id ?? null))
          const unit =
            nested.unit === undefined
              ? undefined
              : yield* nestedItem(nested.unit, "units:write", caller, () =>
                  roster.upsertUnits(slug, caller.clientId, [
                    isJsonObject(nested.unit) && unitsProperty !== null
                      ? { property_external_id: unitsProperty, ...nested.unit }
                      : nested.unit,
                  ]),
                )

          const { fields, complete } = mergeProspect({
            owner,
            source,
            input,
            existing,
            sealedSsn,
            occurredAt: request.occurredAt,
            property,
            unit,
          })
          const grantedTo = owner.managed_by_service ? caller.clientId : null
          const write: ProspectWrite = { ...fields, ...(yield* resolve(owner.id, fields, grantedTo)) }
          const id =
            existing === undefined
              ? yield* repo.insert(write)
              : (yield* repo.update(existing.id, write), existing.id)
          const row: ProspectRow = { ...write, id, ...enrollmentSummaryOf(existing) }
          yield* outbox.enqueue(writeMessages(slug, existing, row, complete))
          return {
            stale: false as const,
            id,
            created: existing === undefined,
            prospect: prospectView(row, slug, source, config.enrollmentHost),
            ...(property === undefined ? {} : { property }),
            ...(unit === undefined ? {} : { unit }),
          }
        }),
      )
    })

    /**
     * `POST /partners/{owner_slug}/prospects`: everything is validated before anything is written; a refused
     * prospect changes nothing.
     */
    const upsert = Effect.fn("Prospects.upsert")(function* (
      slug: string,
      caller: Caller,
      { input, nested }: ProspectPost,
    ) {
      const source = yield* sources.find(input.source)
      if (source === undefined || !(yield* sources.mayUse(source.code, caller.clientId))) {
        return yield* new UnknownSource({ source: input.source })
      }
      const owner = yield* roster.ownerBySlug(slug)
      if (owner === undefined) return yield* Effect.die(new Error(`owner ${slug} vanished`))
      const saved = yield* save({ owner, source, input, nested, caller })
      if (saved.stale) return yield* Effect.die(new Error("an API write cannot be stale"))
      const { stale: _, id: __, ...answer } = saved
      return answer
    })

    /** `GET /partners/{owner_slug}/prospects/{source}/{source_prospect_id}`. */
    const get = Effect.fn("Prospects.get")(function* (
      slug: string,
      source: string,
      sourceProspectId: string,
    ) {
      const row = yield* repo.findOwned(slug, source, sourceProspectId)
      if (row === undefined) return yield* new ProspectNotFound()
      return prospectView(row, slug, yield* sources.ofProspect(row.source), config.enrollmentHost)
    })

    /** Operators: a prospect by its key, whatever its owner, with the owner's slug. */
    const show = Effect.fn("Prospects.show")(function* (source: string, sourceProspectId: string) {
      const row = yield* repo.find(source, sourceProspectId)
      if (row === undefined) return yield* new ProspectNotFound()
      const slug = yield* repo.ownerSlug(row.owner_id)
      return {
        owner_slug: slug,
        prospect: prospectView(row, slug, yield* sources.ofProspect(row.source), config.enrollmentHost),
      }
    })

    /**
     * Operators: resolves the building and unit again and decides a complete prospect anew (one in `error` once
     * its cause is fixed, or after a roster change), as a re-POST of the same data would; an incomplete one is
     * refused with what it lacks.
     */
    const recheck = Effect.fn("Prospects.recheck")(function* (source: string, sourceProspectId: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lock(source, sourceProspectId)
          const existing = yield* repo.find(source, sourceProspectId)
          if (existing === undefined) return yield* new ProspectNotFound()
          const sourceConfig = yield* sources.ofProspect(existing.source)
          const missing = missingFields(existing, sourceConfig)
          if (missing.length > 0) return yield* new ProspectIncomplete({ missing })
          const slug = yield* repo.ownerSlug(existing.owner_id)
          const write: ProspectWrite = {
            ...existing,
            // An operator acts for the service: every building of the owner counts.
            ...(yield* resolve(existing.owner_id, existing, null)),
            ...undecided,
            status: "processing",
            version: existing.version + 1,
          }
          yield* repo.update(existing.id, write)
          const row: ProspectRow = { ...write, id: existing.id }
          yield* outbox.enqueue([eligibilityRequested(slug, row)])
          return { owner_slug: slug, prospect: prospectView(row, slug, sourceConfig, config.enrollmentHost) }
        }),
      )
    })

    return { upsert, save, validate, get, show, recheck }
  }),
}) {
  static readonly layer = Layer.effect(Prospects, Prospects.make).pipe(
    Layer.provide(ProspectsRepo.layer),
    Layer.provide(Sources.layer),
    Layer.provide(Crypto.layer),
  )
}

import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Crypto } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import type { Caller } from "../platform/Http.ts"
import { Outbox, type OutboxMessage } from "../platform/Outbox.ts"
import { decodeFields } from "../platform/Validation.ts"
import { failed, type ItemResult } from "../roster/Domain.ts"
import type { OwnerRow } from "../roster/Repo.ts"
import { Roster } from "../roster/Roster.ts"
import { ProspectFields, ProspectIncomplete, ProspectInvalid, ProspectNotFound } from "./Domain.ts"
import { decideEligibility, factsOf, isoDate } from "./Eligibility.ts"
import {
  eligibilityDecided,
  eligibilityRequested,
  type EligibilityRequested,
  enrollmentUrls,
  prospectEvent,
} from "./Events.ts"
import { type ProspectRow, ProspectsRepo, type ProspectWrite } from "./Repo.ts"
import { missingFields, prospectView } from "./View.ts"
import { type Source, Sources, UnknownSource } from "./Sources.ts"

const decodeProspect = decodeFields(ProspectFields)

/** "monthly_rent_cents" -> "Monthly rent cents", as the published API words its field errors. */
const humanize = (field: string) => {
  const words = field.split(".").at(-1)!.replaceAll("_", " ")
  return words.charAt(0).toUpperCase() + words.slice(1)
}

/** One message per field, as a sentence; a bad phone is always exactly "Phone is not valid". */
const fieldMessages = (errors: Record<string, Array<string>>) =>
  Object.fromEntries(
    Object.entries(errors).map(([field, messages]) => [
      field,
      field === "phone"
        ? "Phone is not valid"
        : messages.map((m) => (/^[A-Z]/.test(m) ? m : `${humanize(field)} ${m}`)).join("; "),
    ]),
  )

/** The prospect's own columns a partner writes: omitted keeps, null clears. */
const MERGED_FIELDS = [
  "email",
  "phone",
  "first_name",
  "last_name",
  "birthdate",
  "lease_start_date",
  "lease_end_date",
  "monthly_rent_cents",
  "deposit_amount_cents",
  "screening_result",
  "employment_status",
  "yearly_income",
  "has_ssn",
  "citizenship",
  "education_level",
  "terms_accepted_at",
  "authorized_members",
  "pms_type",
  "pms_property_id",
  "pms_unit_id",
  "pms_prospect_id",
] as const satisfies ReadonlyArray<keyof ProspectFields & keyof ProspectWrite>

const undecided = {
  effective_coverage_amount_cents: null,
  sdi_ineligibility_reasons: null,
  cd_ineligibility_reasons: null,
  rg_eligibility_status: null,
  rg_ineligibility_reasons: null,
  eligible: null,
  error_reason: null,
} as const

const toText = (value: unknown) => (value === null || value === undefined ? null : String(value))
/** As the database reads it back: UTC, milliseconds only when there are some. */
const utcTimestamp = (value: string | null) =>
  value === null ? null : new Date(value).toISOString().replace(".000Z", "Z")
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The prospect's fields, or ProspectInvalid with a sentence per bad field. */
export const validate = (raw: unknown) => {
  const decoded = decodeProspect(raw)
  return "errors" in decoded
    ? Effect.fail(new ProspectInvalid({ fields: fieldMessages(decoded.errors) }))
    : Effect.succeed(decoded.value)
}

export interface SaveRequest {
  readonly owner: OwnerRow
  readonly source: Source
  readonly input: ProspectFields
  /** `property` and `unit` items to apply through the roster first. */
  readonly nested: { readonly property?: unknown; readonly unit?: unknown }
  readonly caller: Caller
  /** An inbound event's time: one older than the newest applied to the prospect changes nothing. */
  readonly occurredAt?: Date
}

export class Prospects extends Context.Service<Prospects>()("partner-service/prospects/Prospects", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* ProspectsRepo
    const sources = yield* Sources
    const roster = yield* Roster
    const outbox = yield* Outbox
    const crypto = yield* Crypto
    const config = yield* AppConfig

    const sourceOf = (code: string) =>
      sources
        .find(code)
        .pipe(
          Effect.flatMap((source) =>
            source === undefined ? Effect.die(new Error(`source ${code} vanished`)) : Effect.succeed(source),
          ),
        )

    /** A nested `property` or `unit`, applied by the roster's own rules as a batch of one. */
    const nestedItem = (
      raw: unknown,
      scope: string,
      caller: Caller,
      apply: () => Effect.Effect<{ readonly results: ReadonlyArray<ItemResult> }, unknown>,
    ) =>
      Effect.gen(function* () {
        if (!caller.scopes.has(scope)) {
          const id = (raw as { external_system_id?: unknown } | null)?.external_system_id
          return failed(typeof id === "string" ? id : "", {
            base: [`needs a token with the ${scope} scope`],
          })
        }
        const { results } = yield* apply().pipe(Effect.orDie)
        return results[0]!
      })

    /**
     * The building and unit the prospect's references name on the owner's roster now, if exactly one each; for
     * a client granted only named buildings of a managed owner, only those.
     */
    const resolve = (ownerId: string, row: ProspectWrite, granted: ReadonlyArray<string> | undefined) =>
      Effect.gen(function* () {
        const named =
          row.property_external_id !== null || row.pms_property_id !== null
            ? yield* repo.resolveProperty(ownerId, {
                externalId: row.property_external_id,
                pmsPropertyId: row.pms_property_id,
              })
            : undefined
        const property =
          granted === undefined || (named?.pms_property_id != null && granted.includes(named.pms_property_id))
            ? named
            : undefined
        const unit =
          property !== undefined && (row.unit_external_id !== null || row.pms_unit_id !== null)
            ? yield* repo.resolveUnit(property.id, {
                externalId: row.unit_external_id,
                pmsUnitId: row.pms_unit_id,
              })
            : undefined
        return { property_id: property?.id ?? null, unit_id: unit?.id ?? null }
      })

    /**
     * Writes a validated prospect for `owner` under the prospect's lock: its nested roster items, the merge with
     * the stored record, the move to `processing` (complete) or `incomplete`, and its events and eligibility
     * request, all in the caller's transaction (or a new one). An inbound event older than the newest one applied
     * changes nothing (`stale`).
     */
    const save = Effect.fn("Prospects.save")(function* (request: SaveRequest) {
      const { owner, source, input, nested, caller } = request
      const slug = owner.slug
      const sealedSsn =
        typeof input.social_security_number === "string"
          ? yield* crypto.seal(new TextEncoder().encode(input.social_security_number))
          : input.social_security_number
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lock(input.source, input.source_prospect_id)
          const existing = yield* repo.find(input.source, input.source_prospect_id)
          if (existing !== undefined && existing.owner_id !== owner.id) {
            return yield* new ProspectInvalid({
              fields: {
                source_prospect_id: "Source prospect id is already used by another property owner's prospect",
              },
            })
          }
          if (
            request.occurredAt !== undefined &&
            existing?.last_event_at != null &&
            request.occurredAt.getTime() < Date.parse(existing.last_event_at)
          ) {
            return { stale: true as const, id: existing.id }
          }

          const property =
            nested.property === undefined
              ? undefined
              : yield* nestedItem(nested.property, "properties:write", caller, () =>
                  roster.upsertProperties(slug, caller.clientId, [nested.property]),
                )
          // An explicit reference wins; a nested item names its own; otherwise the stored reference stays.
          const reference = (
            given: string | null | undefined,
            item: ItemResult | undefined,
            stored: string | null | undefined,
          ) =>
            given !== undefined
              ? given
              : item !== undefined
                ? item.external_system_id || null
                : (stored ?? null)
          const propertyExternalId = reference(
            input.property_external_id,
            property,
            existing?.property_external_id,
          )
          // A nested unit belongs to the prospect's building unless it names another, however that is named.
          const pmsPropertyId =
            input.pms_property_id !== undefined ? input.pms_property_id : (existing?.pms_property_id ?? null)
          const unitsProperty =
            propertyExternalId ??
            (pmsPropertyId === null || nested.unit === undefined
              ? null
              : ((yield* repo.resolveProperty(owner.id, { externalId: null, pmsPropertyId }))
                  ?.external_system_id ?? null))
          const unit =
            nested.unit === undefined
              ? undefined
              : yield* nestedItem(nested.unit, "units:write", caller, () =>
                  roster.upsertUnits(slug, caller.clientId, [
                    isObject(nested.unit) && unitsProperty !== null
                      ? { property_external_id: unitsProperty, ...nested.unit }
                      : nested.unit,
                  ]),
                )

          const kept = <F extends (typeof MERGED_FIELDS)[number]>(field: F) =>
            input[field] === undefined ? (existing?.[field] ?? null) : input[field]
          const fields: ProspectWrite = {
            ...(Object.fromEntries(MERGED_FIELDS.map((field) => [field, kept(field)])) as Pick<
              ProspectWrite,
              (typeof MERGED_FIELDS)[number]
            >),
            owner_id: owner.id,
            source: input.source,
            source_prospect_id: input.source_prospect_id,
            terms_accepted_at: utcTimestamp(kept("terms_accepted_at")),
            monthly_rent_cents: toText(kept("monthly_rent_cents")),
            deposit_amount_cents: toText(kept("deposit_amount_cents")),
            yearly_income: toText(kept("yearly_income")),
            property_external_id: propertyExternalId,
            unit_external_id: reference(input.unit_external_id, unit, existing?.unit_external_id),
            social_security_number_sealed:
              sealedSsn === undefined ? (existing?.social_security_number_sealed ?? null) : sealedSsn,
            guarantor_coverage: input.guarantor_coverage ?? existing?.guarantor_coverage ?? false,
            status: "incomplete",
            version: (existing?.version ?? 0) + 1,
            decided_version: existing?.decided_version ?? null,
            property_id: null,
            unit_id: null,
            last_event_at:
              request.occurredAt === undefined
                ? (existing?.last_event_at ?? null)
                : request.occurredAt.toISOString(),
            ...undecided,
          }
          const granted = owner.managed_by_service
            ? yield* roster.grantedBuildings(owner.id, caller.clientId)
            : undefined
          const resolved = yield* resolve(owner.id, fields, granted)
          const complete = missingFields(fields, source).length === 0
          const write: ProspectWrite = {
            ...fields,
            ...resolved,
            status: complete ? "processing" : "incomplete",
          }
          const id =
            existing === undefined
              ? yield* repo.insert(write)
              : (yield* repo.update(existing.id, write), existing.id)
          const row: ProspectRow = { ...write, id }

          const messages: Array<OutboxMessage> = []
          if (existing === undefined) messages.push(prospectEvent("prospect.created", slug, row))
          if (!complete && existing?.status !== "incomplete") {
            messages.push(prospectEvent("prospect.incomplete", slug, row))
          }
          if (complete) messages.push(eligibilityRequested(slug, row))
          yield* outbox.enqueue(messages)
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
    const upsert = Effect.fn("Prospects.upsert")(function* (slug: string, caller: Caller, body: unknown) {
      const raw = isObject(body) ? body.prospect : undefined
      if (!isObject(raw)) {
        return yield* new ProspectInvalid({
          fields: {
            prospect: "The body must be an object whose one key, prospect, holds the prospect fields",
          },
        })
      }
      const input = yield* validate(raw)
      const source = yield* sources.find(input.source)
      if (source === undefined || !(yield* sources.mayUse(source.code, caller.clientId))) {
        return yield* new UnknownSource({ source: input.source })
      }
      const owner = yield* roster.ownerBySlug(slug)
      if (owner === undefined) return yield* Effect.die(new Error(`owner ${slug} vanished`))
      const saved = yield* save({ owner, source, input, nested: raw, caller })
      if (saved.stale) return yield* Effect.die(new Error("an API write cannot be stale"))
      const { stale: _, id: __, ...answer } = saved
      return answer
    })

    /** The owner's prospect, or ProspectNotFound (also for another owner's). */
    const ownersProspect = (slug: string, source: string, sourceProspectId: string) =>
      Effect.gen(function* () {
        const owner = yield* roster.ownerBySlug(slug)
        const row = yield* repo.find(source, sourceProspectId)
        if (owner === undefined || row === undefined || row.owner_id !== owner.id) {
          return yield* new ProspectNotFound()
        }
        return row
      })

    /** `GET /partners/{owner_slug}/prospects/{source}/{source_prospect_id}`. */
    const get = Effect.fn("Prospects.get")(function* (
      slug: string,
      source: string,
      sourceProspectId: string,
    ) {
      const row = yield* ownersProspect(slug, source, sourceProspectId)
      return prospectView(row, slug, yield* sourceOf(row.source), config.enrollmentHost)
    })

    /**
     * The eligibility actor's work for one request: under the prospect's lock, decide the version asked for if it
     * is still the current one and undecided, record the decision and announce `prospect.ready`. A request for a
     * superseded version does nothing: the write that superseded it asked for its own decision.
     */
    const decide = Effect.fn("Prospects.decide")(function* (request: EligibilityRequested) {
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lock(request.source, request.source_prospect_id)
          const facts = yield* repo.facts(request.prospect_id)
          if (
            facts === undefined ||
            facts.prospect.version !== request.version ||
            (facts.prospect.status !== "processing" && facts.prospect.status !== "error")
          ) {
            return "superseded" as const
          }
          const decision = decideEligibility(factsOf(facts, isoDate(yield* Clock.currentTimeMillis)))
          const landed = yield* repo.recordDecision(request.prospect_id, request.version, {
            effective_coverage_amount_cents: decision.effectiveCoverageAmountCents,
            sdi_ineligibility_reasons: decision.sdiIneligibilityReasons,
            cd_ineligibility_reasons: decision.cdIneligibilityReasons,
            rg_eligibility_status: decision.renterGuarantee?.status ?? null,
            rg_ineligibility_reasons: decision.renterGuarantee?.reasons ?? null,
            eligible: decision.eligibleForAnyProduct,
          })
          if (!landed) return "superseded" as const
          const row = (yield* repo.findById(request.prospect_id))!
          const source = yield* sourceOf(row.source)
          yield* outbox.enqueue([
            prospectEvent(
              "prospect.ready",
              facts.owner.slug,
              row,
              enrollmentUrls(config.enrollmentHost, source.flow, facts.owner.slug, row),
            ),
            eligibilityDecided(facts.owner.slug, row),
          ])
          return "decided" as const
        }),
      )
    })

    /** After repeated failures to decide: the version goes to `error` with the reason, for operators. */
    const fail = Effect.fn("Prospects.fail")(function* (request: EligibilityRequested, reason: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lock(request.source, request.source_prospect_id)
          if (!(yield* repo.recordError(request.prospect_id, request.version, reason))) return false
          const row = (yield* repo.findById(request.prospect_id))!
          yield* outbox.enqueue([eligibilityDecided(yield* repo.ownerSlug(row.owner_id), row)])
          return true
        }),
      )
    })

    /**
     * Staging: removes the owner's prospect so its identifiers can be used again (the next POST creates it,
     * with `prospect.created`). Policies and PMS residents come with later issues, so those lists are empty.
     */
    const resetTestResident = Effect.fn("Prospects.resetTestResident")(function* (
      slug: string,
      source: string,
      sourceProspectId: string,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          yield* repo.lock(source, sourceProspectId)
          const row = yield* ownersProspect(slug, source, sourceProspectId)
          yield* repo.delete(row.id)
          return {
            insurance_policy_ids: [],
            unlinked_yardi_resident_ids: [],
            reprocessed_prospect_id: Number(row.id),
          }
        }),
      )
    })

    /** Staging: removes every prospect of the owner with this email (case-insensitive). */
    const resetByEmail = Effect.fn("Prospects.resetByEmail")(function* (slug: string, email: string) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const owner = yield* roster.ownerBySlug(slug)
          if (owner === undefined) return { prospect_ids: [], insurance_policy_ids: [] }
          // Each prospect's lock, in one order, so a racing POST runs wholly before or after the reset.
          for (const key of yield* repo.keysByEmail(owner.id, email)) {
            yield* repo.lock(key.source, key.source_prospect_id)
          }
          const ids = yield* repo.deleteByEmail(owner.id, email)
          return { prospect_ids: ids.map(Number), insurance_policy_ids: [] }
        }),
      )
    })

    /** Operators: a prospect by its key, whatever its owner, with the owner's slug. */
    const show = Effect.fn("Prospects.show")(function* (source: string, sourceProspectId: string) {
      const row = yield* repo.find(source, sourceProspectId)
      if (row === undefined) return yield* new ProspectNotFound()
      const slug = yield* repo.ownerSlug(row.owner_id)
      return {
        owner_slug: slug,
        prospect: prospectView(row, slug, yield* sourceOf(row.source), config.enrollmentHost),
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
          const sourceConfig = yield* sourceOf(existing.source)
          const missing = missingFields(existing, sourceConfig)
          if (missing.length > 0) return yield* new ProspectIncomplete({ missing })
          const slug = yield* repo.ownerSlug(existing.owner_id)
          const write: ProspectWrite = {
            ...existing,
            // An operator acts for the service: every building of the owner counts.
            ...(yield* resolve(existing.owner_id, existing, undefined)),
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

    return { upsert, save, validate, get, decide, fail, resetTestResident, resetByEmail, show, recheck }
  }),
}) {
  static readonly layer = Layer.effect(Prospects, Prospects.make).pipe(
    Layer.provide(ProspectsRepo.layer),
    Layer.provide(Sources.layer),
    Layer.provide(Crypto.layer),
  )
}

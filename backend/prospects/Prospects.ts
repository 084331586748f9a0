import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Crypto } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import type { Caller } from "../platform/Http.ts"
import { Outbox, type OutboxMessage } from "../platform/Outbox.ts"
import { decodeFields, isJsonObject } from "../platform/Validation.ts"
import { failed, type ItemResult, type OwnerRow } from "../roster/Domain.ts"
import { Roster } from "../roster/Roster.ts"
import {
  type EnrollmentFacts,
  type LatestCoverage,
  type OfferedProduct,
  ProspectFields,
  ProspectIncomplete,
  ProspectInvalid,
  ProspectNotFound,
} from "./Domain.ts"
import { decideEligibility, factsOf, isoDate } from "./Eligibility.ts"
import {
  eligibilityDecided,
  eligibilityRequested,
  type EligibilityRequested,
  enrollmentUrls,
  prospectEvent,
} from "./Events.ts"
import { enrollmentSummaryOf, type ProspectRow, ProspectsRepo, type ProspectWrite } from "./Repo.ts"
import { missingFields, prospectView, toInt } from "./View.ts"
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

/** A prospect column a partner writes: omitted keeps the stored value, null clears it. */
type MergedField = keyof ProspectFields & keyof ProspectWrite

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

/** The prospect's fields, or ProspectInvalid with a sentence per bad field (returned, not failed). */
export const checkFields = (raw: unknown): ProspectFields | ProspectInvalid => {
  const decoded = decodeProspect(raw)
  return "errors" in decoded ? new ProspectInvalid({ fields: fieldMessages(decoded.errors) }) : decoded.value
}

/** The prospect's fields, or ProspectInvalid with a sentence per bad field. */
export const validate = (raw: unknown) => {
  const checked = checkFields(raw)
  return checked instanceof ProspectInvalid ? Effect.fail(checked) : Effect.succeed(checked)
}

/** An explicit reference wins; a nested item names its own; otherwise the stored reference stays. */
export const reference = (
  given: string | null | undefined,
  item: ItemResult | undefined,
  stored: string | null | undefined,
) => (given !== undefined ? given : item !== undefined ? item.external_system_id || null : (stored ?? null))

/** A key another owner's prospect holds cannot be written for this owner. */
export const ownerConflict = (existing: ProspectRow | undefined, owner: OwnerRow) =>
  existing !== undefined && existing.owner_id !== owner.id
    ? new ProspectInvalid({
        fields: {
          source_prospect_id: "Source prospect id is already used by another property owner's prospect",
        },
      })
    : undefined

/** An inbound event older than the newest one applied to the prospect changes nothing. */
export const isStale = (existing: ProspectRow | undefined, occurredAt: Date | undefined) =>
  occurredAt !== undefined &&
  existing?.last_event_at != null &&
  occurredAt.getTime() < Date.parse(existing.last_event_at)

export interface Merge {
  readonly owner: OwnerRow
  readonly source: Source
  readonly input: ProspectFields
  readonly existing: ProspectRow | undefined
  /** The SSN sealed, null to clear, undefined to keep. */
  readonly sealedSsn: Buffer | null | undefined
  readonly occurredAt?: Date | undefined
  readonly property?: ItemResult | undefined
  readonly unit?: ItemResult | undefined
}

/**
 * The prospect a write leaves, by the one rule every write follows (REST and inbound events alike): omitted
 * fields keep the stored value, null clears it; a new version, undecided, `processing` when complete, else
 * `incomplete`. Its building and unit are resolved against the roster by the caller (`property_id`/`unit_id`).
 */
export const mergeProspect = (merge: Merge) => {
  const { owner, input, existing } = merge
  const kept = <F extends MergedField>(field: F) =>
    input[field] === undefined ? (existing?.[field] ?? null) : input[field]
  // One literal, not a spread of a built object: V8 copies a spread plus further keys property by property,
  // which cost tens of microseconds per prospect on the ingest path.
  const fields: { -readonly [K in keyof ProspectWrite]: ProspectWrite[K] } = {
    owner_id: owner.id,
    source: input.source,
    source_prospect_id: input.source_prospect_id,
    status: "incomplete",
    email: kept("email"),
    phone: kept("phone"),
    first_name: kept("first_name"),
    last_name: kept("last_name"),
    birthdate: kept("birthdate"),
    lease_start_date: kept("lease_start_date"),
    lease_end_date: kept("lease_end_date"),
    monthly_rent_cents: toText(kept("monthly_rent_cents")),
    deposit_amount_cents: toText(kept("deposit_amount_cents")),
    screening_result: kept("screening_result"),
    employment_status: kept("employment_status"),
    yearly_income: toText(kept("yearly_income")),
    has_ssn: kept("has_ssn"),
    citizenship: kept("citizenship"),
    education_level: kept("education_level"),
    terms_accepted_at: utcTimestamp(kept("terms_accepted_at")),
    authorized_members: kept("authorized_members") as ProspectWrite["authorized_members"],
    social_security_number_sealed:
      merge.sealedSsn === undefined ? (existing?.social_security_number_sealed ?? null) : merge.sealedSsn,
    guarantor_coverage: input.guarantor_coverage ?? existing?.guarantor_coverage ?? false,
    pms_type: kept("pms_type"),
    pms_property_id: kept("pms_property_id"),
    pms_unit_id: kept("pms_unit_id"),
    pms_prospect_id: kept("pms_prospect_id"),
    property_external_id: reference(
      input.property_external_id,
      merge.property,
      existing?.property_external_id,
    ),
    unit_external_id: reference(input.unit_external_id, merge.unit, existing?.unit_external_id),
    property_id: null,
    unit_id: null,
    version: (existing?.version ?? 0) + 1,
    decided_version: existing?.decided_version ?? null,
    effective_coverage_amount_cents: undecided.effective_coverage_amount_cents,
    sdi_ineligibility_reasons: undecided.sdi_ineligibility_reasons,
    cd_ineligibility_reasons: undecided.cd_ineligibility_reasons,
    rg_eligibility_status: undecided.rg_eligibility_status,
    rg_ineligibility_reasons: undecided.rg_ineligibility_reasons,
    eligible: undecided.eligible,
    error_reason: undecided.error_reason,
    last_event_at:
      merge.occurredAt === undefined ? (existing?.last_event_at ?? null) : merge.occurredAt.toISOString(),
  }
  const complete = missingFields(fields, merge.source).length === 0
  if (complete) fields.status = "processing"
  return { fields: fields as ProspectWrite, complete }
}

/**
 * What a write announces, through the outbox: `prospect.created` for a new prospect, `prospect.incomplete` when it
 * becomes incomplete, and an eligibility request for the version it wrote when it is complete.
 */
export const writeMessages = (
  slug: string,
  previous: Pick<ProspectRow, "status"> | undefined,
  row: ProspectRow,
  complete: boolean,
): Array<OutboxMessage> => [
  ...(previous === undefined ? [prospectEvent("prospect.created", slug, row)] : []),
  ...(!complete && previous?.status !== "incomplete"
    ? [prospectEvent("prospect.incomplete", slug, row)]
    : []),
  ...(complete ? [eligibilityRequested(slug, row)] : []),
]

/** A prospect row being written, completed in place (id, building, unit) as the batch learns them. */
type Draft = { -readonly [K in keyof ProspectRow]: ProspectRow[K] }

/** One inbound event's write, for `Prospects.saveEvents`. */
export interface EventWrite {
  readonly owner: OwnerRow
  readonly source: Source
  readonly input: ProspectFields
  readonly clientId: string
  readonly occurredAt: Date
}

export type EventWritten =
  | { readonly outcome: "applied" | "stale"; readonly id: string }
  | { readonly outcome: "refused"; readonly error: ProspectInvalid }

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
      const sealedSsn =
        typeof input.social_security_number === "string"
          ? yield* crypto.seal(new TextEncoder().encode(input.social_security_number))
          : input.social_security_number
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
     * Inbound events' writes, set-based, in the caller's transaction (or a new one): the prospects' locks in one
     * order, one read of the stored prospects, then each write in the order given by the same rules as `save`
     * (a later event of a prospect sees the earlier ones: stale detection and events between them hold), one
     * upsert of each prospect's final state with its building and unit resolved, and every write's messages.
     */
    const saveEvents = Effect.fn("Prospects.saveEvents")(function* (writes: ReadonlyArray<EventWrite>) {
      if (writes.length === 0) return []
      const sealed = yield* Effect.forEach(writes, ({ input }) =>
        typeof input.social_security_number === "string"
          ? crypto.seal(new TextEncoder().encode(input.social_security_number))
          : Effect.succeed(input.social_security_number),
      )
      return yield* db.transaction(
        Effect.gen(function* () {
          const keyOf = (w: EventWrite) => JSON.stringify([w.input.source, w.input.source_prospect_id])
          const keys = [...new Map(writes.map((w) => [keyOf(w), w.input] as const)).values()].map(
            (input) => ({
              source: input.source,
              source_prospect_id: input.source_prospect_id,
            }),
          )
          yield* repo.lockAll(keys)
          const state = new Map<string, ProspectRow | undefined>(
            (yield* repo.findAll(keys)).map((row) => [
              JSON.stringify([row.source, row.source_prospect_id]),
              row,
            ]),
          )
          // The prospect each write applied to or found newer; a prospect new in this batch gets its id below.
          const results: Array<
            | { readonly outcome: "refused"; readonly error: ProspectInvalid }
            | { readonly outcome: "applied" | "stale"; readonly row: Pick<ProspectRow, "id"> }
          > = []
          const written: Array<{
            readonly key: string
            readonly slug: string
            readonly previous: ProspectRow | undefined
            readonly row: Draft
            readonly complete: boolean
          }> = []
          const last = new Map<string, { readonly write: EventWrite; readonly row: Draft }>()
          for (const [i, write] of writes.entries()) {
            const key = keyOf(write)
            const existing = state.get(key)
            const conflict = ownerConflict(existing, write.owner)
            if (conflict !== undefined) {
              results.push({ outcome: "refused", error: conflict })
              continue
            }
            if (existing !== undefined && isStale(existing, write.occurredAt)) {
              results.push({ outcome: "stale", row: existing })
              continue
            }
            const { fields, complete } = mergeProspect({
              owner: write.owner,
              source: write.source,
              input: write.input,
              existing,
              sealedSsn: sealed[i],
              occurredAt: write.occurredAt,
            })
            // A prospect new in this batch has its id once it is inserted, below.
            const row: Draft = Object.assign(fields, { id: existing?.id ?? "" })
            state.set(key, row)
            last.set(key, { write, row })
            written.push({ key, slug: write.owner.slug, previous: existing, row, complete })
            results.push({ outcome: "applied", row })
          }

          // Each prospect's final state is what is stored, with its building and unit as the roster has them now.
          const finals = [...last.values()]
          const resolved = yield* repo.resolveAll(
            finals.map(({ write, row }) => ({
              ownerId: write.owner.id,
              grantedTo: write.owner.managed_by_service ? write.clientId : null,
              row,
            })),
          )
          for (const [i, { row }] of finals.entries()) {
            row.property_id = resolved[i]!.property_id
            row.unit_id = resolved[i]!.unit_id
          }
          const ids = new Map(
            (yield* repo.upsertAll(finals.map(({ row }) => row))).map((r) => [
              JSON.stringify([r.source, r.source_prospect_id]),
              r.id,
            ]),
          )
          for (const w of written) w.row.id = ids.get(w.key)!
          yield* outbox.enqueue(written.flatMap((w) => writeMessages(w.slug, w.previous, w.row, w.complete)))
          return results.map((result): EventWritten =>
            result.outcome === "refused" ? result : { outcome: result.outcome, id: result.row.id },
          )
        }),
      )
    })

    /**
     * `POST /partners/{owner_slug}/prospects`: everything is validated before anything is written; a refused
     * prospect changes nothing.
     */
    const upsert = Effect.fn("Prospects.upsert")(function* (slug: string, caller: Caller, body: unknown) {
      const raw = isJsonObject(body) ? body.prospect : undefined
      if (!isJsonObject(raw)) {
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
     * with `prospect.created`). Its policies stay, detached from it, and are listed; PMS residents are never
     * linked, so that list is empty.
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
          const policyIds = yield* repo.delete(row.id)
          return {
            insurance_policy_ids: policyIds,
            unlinked_yardi_resident_ids: [],
            reprocessed_prospect_id: Number(row.id),
          }
        }),
      )
    })

    /**
     * Staging: removes every prospect of the owner with this email (case-insensitive), or every prospect of the
     * owner when no email is given (the published `test/sayrhino_users` reset names none).
     */
    const resetByEmail = Effect.fn("Prospects.resetByEmail")(function* (
      slug: string,
      email: string | undefined,
    ) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const owner = yield* roster.ownerBySlug(slug)
          if (owner === undefined) return { prospect_ids: [], insurance_policy_ids: [] }
          // Each prospect's lock, in one order, so a racing POST runs wholly before or after the reset.
          for (const key of yield* repo.keysByEmail(owner.id, email)) {
            yield* repo.lock(key.source, key.source_prospect_id)
          }
          const { ids, policyIds } = yield* repo.deleteByEmail(owner.id, email)
          return { prospect_ids: ids, insurance_policy_ids: policyIds }
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

    /**
     * The enrollment journey's read of a prospect by its key: what the partner sent, with its source, owner,
     * building and unit as they are now; undefined when there is no such prospect.
     */
    const enrollmentFacts = Effect.fn("Prospects.enrollmentFacts")(function* (
      source: string,
      sourceProspectId: string,
    ) {
      const row = yield* repo.find(source, sourceProspectId)
      if (row === undefined) return undefined
      const more = yield* repo.enrollmentFacts(row.id)
      if (more === undefined) return undefined
      const urls = enrollmentUrls(config.enrollmentHost, more.flow, more.slug, row)
      return {
        prospect: {
          id: row.id,
          version: row.version,
          source: row.source,
          sourceProspectId: row.source_prospect_id,
          status: row.status,
          eligible: row.status === "ready" && row.eligible === true,
          email: row.email,
          phone: row.phone,
          firstName: row.first_name,
          lastName: row.last_name,
          birthdate: row.birthdate,
          leaseStartDate: row.lease_start_date,
          leaseEndDate: row.lease_end_date,
          monthlyRentCents: toInt(row.monthly_rent_cents),
          depositAmountCents: toInt(row.deposit_amount_cents),
          screeningResult: row.screening_result as EnrollmentFacts["prospect"]["screeningResult"],
          employmentStatus: row.employment_status as EnrollmentFacts["prospect"]["employmentStatus"],
          yearlyIncome: toInt(row.yearly_income),
          hasSsn: row.has_ssn,
          termsAcceptedAt: row.terms_accepted_at,
          guarantorCoverage: row.guarantor_coverage,
          pmsType: row.pms_type,
          pmsPropertyId: row.pms_property_id,
          pmsUnitId: row.pms_unit_id,
          pmsProspectId: row.pms_prospect_id,
          applicationSubmitted: row.application_submitted ?? false,
        },
        source: { flow: more.flow, redirectDomains: more.redirect_domains },
        owner: {
          id: more.owner_id,
          slug: more.slug,
          name: more.name,
          active: more.purchase_flow_enabled,
          maxCoverageAmountCents: toInt(more.max_coverage_amount_cents),
          embeddedFrameAncestors: more.embedded_frame_ancestors,
        },
        property:
          more.property === null
            ? undefined
            : {
                id: more.property.id,
                buildingName: more.property.building_name,
                street: more.property.street,
                city: more.property.city,
                state: more.property.state,
                zip: more.property.zip,
                active: more.property.active,
                renterGuaranteeEnabled: more.property.renter_guarantee_enabled,
                defaultCoverageMultiplier: more.property.default_coverage_value,
                pmsType: more.property.pms_type,
                pmsPropertyId: more.property.pms_property_id,
                policyHolderName: more.property.policy_holder_name,
              },
        unit:
          more.property === null || more.unit === null
            ? undefined
            : {
                id: more.unit.id,
                name: more.unit.name,
                pmsUnitId: more.unit.pms_unit_id,
                defaultCoverageMultiplier: more.unit.default_coverage_value,
              },
        enrollmentUrl: urls.enrollment_url,
      } satisfies EnrollmentFacts
    })

    /** The journey's offers, published on the prospect as `offered_products` (and `percent_savings`). */
    const recordOffers = Effect.fn("Prospects.recordOffers")(function* (
      prospectId: string,
      offered: ReadonlyArray<OfferedProduct>,
      percentSavings: number | null,
    ) {
      yield* repo.recordOffers(prospectId, offered, percentSavings)
    })

    /** The renter submitted an application: `application_submitted` from now on. */
    const recordApplicationSubmitted = Effect.fn("Prospects.recordApplicationSubmitted")(function* (
      prospectId: string,
    ) {
      yield* repo.recordApplicationSubmitted(prospectId)
    })

    /** The coverage of the prospect's latest documented policy: `latest_coverage`. */
    const recordLatestCoverage = Effect.fn("Prospects.recordLatestCoverage")(function* (
      prospectId: string,
      coverage: LatestCoverage,
    ) {
      yield* repo.recordLatestCoverage(prospectId, coverage)
    })

    return {
      upsert,
      save,
      enrollmentFacts,
      recordOffers,
      recordApplicationSubmitted,
      recordLatestCoverage,
      saveEvents,
      validate,
      get,
      decide,
      fail,
      resetTestResident,
      resetByEmail,
      show,
      recheck,
    }
  }),
}) {
  static readonly layer = Layer.effect(Prospects, Prospects.make).pipe(
    Layer.provide(ProspectsRepo.layer),
    Layer.provide(Sources.layer),
    Layer.provide(Crypto.layer),
  )
}

import { Context, Effect, Layer } from "effect"
import { ClientReads } from "../auth/ClientReads.ts"
import type { FoundRow } from "../contract/Search.ts"
import { EnrollmentReads } from "../enrollment/EnrollmentReads.ts"
import { iso, isoOrNull } from "../platform/Dates.ts"
import { Nats } from "../platform/Nats.ts"
import { PolicyReads } from "../policies/PolicyReads.ts"
import { ProspectReads } from "../prospects/ProspectReads.ts"
import { OwnerReads } from "../roster/OwnerReads.ts"
import { DeliveryReads } from "../webhooks/endpoints/DeliveryReads.ts"
import { EndpointReads } from "../webhooks/endpoints/EndpointReads.ts"
import type {
  EligibilityDecision,
  OwnerBuilding,
  OwnerDetail,
  OwnerSummary,
  ProspectDetail,
  ProspectEmitted,
  ProspectStatusChange,
  SearchHit,
} from "./DirectoryApi.ts"
import { OwnerPageNotFound, ProspectPageNotFound } from "./Domain.ts"

/**
 * The console's owners, prospects and search. An owner's page and a prospect's rows come from Postgres; what
 * happened to a prospect (its eligibility decisions, the events emitted for it) from the `ELIGIBILITY` and
 * `EVENTS` streams, which keep every message for their retention, and each event's deliveries from Postgres.
 */

/** Buildings and units an owner's page lists; a larger roster is cut short, and says so. */
const BUILDINGS_SHOWN = 200
const UNITS_SHOWN = 2000
/** The longest list the search answers with. */
const SEARCH_RESULTS = 20
/** How long before a prospect's row was written its first message may have been stored (clocks differ). */
const CLOCK_MARGIN_MS = 60_000

const PROSPECT_ID = /^tpp_([1-9]\d{0,17})$/
/** An id as typed or as the lists write it (`#973`). */
const WHOLE_NUMBER = /^#?([1-9]\d{0,17})$/
/** What may be a renter's name: letters, with spaces, apostrophes, dots and hyphens between. */
const NAME = /^\p{L}[\p{L}\p{M}' .-]{1,99}$/u
/** What may be an event id: one token, no spaces. */
const EVENT_ID = /^[\w-]{8,100}$/
const EMAIL = /^[^\s@]+@[^\s@]+$/

/** The row id behind a prospect's service id (`tpp_<n>`), or undefined. */
export const prospectRowId = (id: string) => PROSPECT_ID.exec(id)?.[1]

/** A stored message's JSON body, or undefined when it is not an object. */
const bodyOf = (data: Uint8Array): Record<string, unknown> | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(data).toString("utf8"))
  } catch {
    return undefined
  }
  return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : undefined
}

/** The one object inside an event envelope's `data` (`third_party_prospect`, `policy`, ...). */
const eventPayload = (body: Record<string, unknown>) => {
  const data = body.data
  const inner = typeof data === "object" && data !== null ? Object.values(data)[0] : undefined
  return typeof inner === "object" && inner !== null ? (inner as Record<string, unknown>) : {}
}

const textOrNull = (value: unknown) => (typeof value === "string" ? value : null)
const textsOrNull = (value: unknown) =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : null

export class Directory extends Context.Service<Directory>()("partner-service/operator/Directory", {
  make: Effect.gen(function* () {
    const roster = yield* OwnerReads
    const grants = yield* ClientReads
    const subscribers = yield* EndpointReads
    const deliveryReads = yield* DeliveryReads
    const prospectReads = yield* ProspectReads
    const enrollments = yield* EnrollmentReads
    const policyReads = yield* PolicyReads
    const nats = yield* Nats

    /** A page of owners, newest first, and the id the next page starts below (undefined on the last). */
    const owners = Effect.fn("Directory.owners")(function* (
      q: string | undefined,
      before: string | undefined,
      limit: number,
    ) {
      const rows = yield* roster.owners(q, before, limit + 1)
      const shown: Array<OwnerSummary> = rows.slice(0, limit).map(({ id: _, created_at, ...row }) => ({
        ...row,
        created_at: iso(created_at),
      }))
      return { owners: shown, nextId: rows.length > limit ? rows[limit - 1]!.id : undefined }
    })

    const owner = Effect.fn("Directory.owner")(function* (slug: string) {
      const row = yield* roster.owner(slug)
      if (row === undefined) return yield* new OwnerPageNotFound()
      const [bankAccounts, buildings, clients, providers] = yield* Effect.all(
        [
          roster.bankAccounts(row.id),
          roster.buildings(row.id, BUILDINGS_SHOWN + 1),
          grants.grantedOwner(row.id),
          subscribers.providersOf(row.id),
        ],
        { concurrency: "unbounded" },
      )
      const listed = buildings.slice(0, BUILDINGS_SHOWN)
      const units = yield* roster.units(
        listed.map((b) => b.id),
        UNITS_SHOWN + 1,
      )
      const endpoints = yield* subscribers.endpointsOf(
        row.id,
        providers.map((p) => p.id),
      )
      const shownBuildings: Array<OwnerBuilding> = listed.map(({ id, ...building }) => ({
        ...building,
        units: units
          .slice(0, UNITS_SHOWN)
          .filter((u) => u.property_id === id)
          .map(({ property_id: _, ...unit }) => unit),
      }))
      return {
        slug: row.slug,
        name: row.name,
        external_org_id: row.external_org_id,
        managed_by_service: row.managed_by_service,
        purchase_flow_enabled: row.purchase_flow_enabled,
        max_coverage_amount_cents:
          row.max_coverage_amount_cents === null ? null : Number(row.max_coverage_amount_cents),
        created_at: iso(row.created_at),
        updated_at: iso(row.updated_at),
        bank_accounts: bankAccounts,
        buildings: shownBuildings,
        buildings_truncated: buildings.length > BUILDINGS_SHOWN || units.length > UNITS_SHOWN,
        clients: clients.map((client) => ({
          ...client,
          granted_at: iso(client.granted_at),
          revoked_at: isoOrNull(client.revoked_at),
        })),
        endpoints,
        providers: providers.map(({ name, coverage }) => ({ name, coverage })),
      } satisfies OwnerDetail
    })

    /**
     * The messages of `base` matching `subject` stored since `since`, oldest first, and from when the stream
     * still holds them when that is later than `since` (it dropped older ones).
     */
    const storedSince = (base: string, subject: string, since: Date) =>
      Effect.gen(function* () {
        const stream = nats.streamName(base)
        if (!(yield* nats.streamExists(stream))) return { messages: [], keptSince: undefined }
        const state = yield* nats.streamState(stream)
        const kept = state.keptSince !== undefined && state.keptSince > since ? state.keptSince : undefined
        const messages =
          state.lastSeq === 0
            ? []
            : yield* nats.readStored(stream, nats.subject(subject), kept ?? since, state.lastSeq)
        return { messages, keptSince: kept }
      })

    const prospect = Effect.fn("Directory.prospect")(function* (id: string) {
      const rowId = prospectRowId(id)
      const row = rowId === undefined ? undefined : yield* prospectReads.prospect(rowId)
      if (row === undefined) return yield* new ProspectPageNotFound()
      const since = new Date(row.created_at.getTime() - CLOCK_MARGIN_MS)
      const [decided, emitted, enrollment, applications, policies, payments] = yield* Effect.all(
        [
          storedSince("ELIGIBILITY", `eligibility.decided.${row.owner_slug}`, since),
          storedSince("EVENTS", `events.${row.owner_slug}.prospect.>`, since),
          enrollments.enrollment(row.id),
          policyReads.applications(row.id),
          policyReads.policies(row.id),
          policyReads.payments(row.id),
        ],
        { concurrency: "unbounded" },
      )

      const decisions: Array<EligibilityDecision> = decided.messages.flatMap((msg) => {
        const body = bodyOf(msg.data)
        if (body === undefined || body.prospect_id !== row.id || typeof body.version !== "number") return []
        return [
          {
            at: iso(new Date(msg.info.timestampNanos / 1e6)),
            version: body.version,
            status: String(body.status),
            eligible: typeof body.eligible === "boolean" ? body.eligible : null,
            effective_coverage_amount_cents:
              typeof body.effective_coverage_amount_cents === "number"
                ? body.effective_coverage_amount_cents
                : null,
            sdi_ineligibility_reasons: textsOrNull(body.sdi_ineligibility_reasons),
            cd_ineligibility_reasons: textsOrNull(body.cd_ineligibility_reasons),
            rg_eligibility_status: textOrNull(body.rg_eligibility_status),
            rg_ineligibility_reasons: textsOrNull(body.rg_ineligibility_reasons),
            error_reason: textOrNull(body.error_reason),
          },
        ]
      })

      // `prospect.created` carries only the partner's id; the later events the service id.
      const events = emitted.messages.flatMap((msg) => {
        const body = bodyOf(msg.data)
        const event = nats.unprefixed(msg.subject).split(".").slice(2).join(".")
        const eventId = msg.headers?.get("Nats-Msg-Id") ?? ""
        if (body === undefined || eventId === "") return []
        const payload = eventPayload(body)
        const ours =
          event === "prospect.created"
            ? payload.id === row.source_prospect_id
            : payload.id === `tpp_${row.id}`
        return ours ? [{ eventId, event, at: new Date(msg.info.timestampNanos / 1e6), payload }] : []
      })
      const deliveries = yield* deliveryReads.deliveriesOf(events.map((e) => e.eventId))
      const shownEvents: Array<ProspectEmitted> = events.map((e) => ({
        event_id: e.eventId,
        event: e.event,
        at: iso(e.at),
        deliveries: deliveries
          .filter((d) => d.event_id === e.eventId)
          .map(({ event_id: _, delivered_at, ...d }) => ({ ...d, delivered_at: isoOrNull(delivered_at) })),
      }))

      const changes: Array<ProspectStatusChange> = [
        ...decisions.map((d) => ({
          at: d.at,
          status: d.status,
          version: d.version,
          via: "eligibility.decided",
        })),
        ...events
          .filter((e) => typeof e.payload.status === "string")
          .map((e) => ({ at: iso(e.at), status: String(e.payload.status), version: null, via: e.event })),
      ].sort((a, b) => a.at.localeCompare(b.at))
      const statusHistory = changes.filter((change, i) => i === 0 || changes[i - 1]!.status !== change.status)
      const announced = events.findLast((e) => e.event !== "prospect.created")?.payload
      const keptSince = [decided.keptSince, emitted.keptSince]
        .filter((at) => at !== undefined)
        .sort((a, b) => b.getTime() - a.getTime())[0]

      return {
        id: `tpp_${row.id}`,
        owner_slug: row.owner_slug,
        owner_name: row.owner_name,
        source: row.source,
        source_prospect_id: row.source_prospect_id,
        status: row.status,
        version: row.version,
        fields: row.fields,
        created_at: iso(row.created_at),
        updated_at: iso(row.updated_at),
        status_history: statusHistory,
        decisions,
        enrollment: {
          enrollment_url: textOrNull(announced?.enrollment_url),
          hosted_enrollment_url: textOrNull(announced?.hosted_enrollment_url),
          details_confirmed_at: isoOrNull(enrollment?.details_confirmed_at ?? null),
          inputs_supplied_at: isoOrNull(enrollment?.inputs_supplied_at ?? null),
          blocked_reason: enrollment?.blocked_reason ?? null,
          started_at: isoOrNull(enrollment?.created_at ?? null),
        },
        applications: applications.map((a) => ({
          ...a,
          submitted_at: isoOrNull(a.submitted_at),
          created_at: iso(a.created_at),
          payments: payments
            .filter((p) => p.application_id === a.id)
            .map(({ application_id: _, created_at, ...p }) => ({ ...p, created_at: iso(created_at) })),
        })),
        policies,
        events: shownEvents,
        history_since: keptSince === undefined ? null : iso(keptSince),
      } satisfies ProspectDetail
    })

    /**
     * What `q` names: an owner by slug or name, a prospect by its service id, its partner's id, its email or the
     * renter's name (or its start), a delivery (`973` or `#973`) or an endpoint by id, the deliveries of an event
     * by its id, a policy by number. Every reading that fits is looked up; a short list.
     */
    const search = Effect.fn("Directory.search")(function* (q: string) {
      const prospectId = prospectRowId(q.toLowerCase())
      const number = WHOLE_NUMBER.exec(q)?.[1]
      const none = Effect.succeed([] as Array<FoundRow>)
      const [prospects, deliveries, eventDeliveries, endpoints, policies, owners] = yield* Effect.all(
        [
          prospectReads.findProspects(
            {
              ...(prospectId === undefined ? {} : { id: prospectId }),
              sourceProspectId: q,
              ...(EMAIL.test(q) ? { email: q } : {}),
              ...(NAME.test(q) ? { name: q } : {}),
            },
            SEARCH_RESULTS,
          ),
          number === undefined ? none : deliveryReads.findDelivery(number),
          EVENT_ID.test(q) ? deliveryReads.findEventDeliveries(q, SEARCH_RESULTS) : none,
          number === undefined ? none : subscribers.findEndpoint(number),
          q.length > 64 ? none : policyReads.findPolicy(q),
          roster.findOwners(q, SEARCH_RESULTS),
        ],
        { concurrency: "unbounded" },
      )
      const hits: Array<SearchHit> = [
        ...prospects.map((r) => ({ kind: "prospect" as const, path: `/prospects/${r.id}`, ...shown(r) })),
        ...[...deliveries, ...eventDeliveries].map((r) => ({
          kind: "delivery" as const,
          path: `/deliveries/${r.id}`,
          ...shown(r),
        })),
        ...endpoints.map((r) => ({ kind: "endpoint" as const, path: `/endpoints/${r.id}`, ...shown(r) })),
        ...policies.map((r) => ({ kind: "policy" as const, path: `/policies/${r.id}`, ...shown(r) })),
        ...owners.map((r) => ({
          kind: "owner" as const,
          path: `/owners/${encodeURIComponent(r.id)}`,
          ...shown(r),
        })),
      ]
      return hits.slice(0, SEARCH_RESULTS)
    })

    return { owners, owner, prospect, search }
  }),
}) {
  static readonly layer = Layer.effect(Directory, Directory.make).pipe(
    Layer.provide([
      OwnerReads.layer,
      ClientReads.layer,
      EndpointReads.layer,
      DeliveryReads.layer,
      ProspectReads.layer,
      EnrollmentReads.layer,
      PolicyReads.layer,
    ]),
  )
}

const shown = (row: FoundRow) => ({ label: row.label, detail: row.detail })

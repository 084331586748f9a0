import { createHash } from "node:crypto"
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { Ingest } from "../../backend/ingest/Ingest.ts"
import { partitionOf } from "../../backend/platform/Partition.ts"
import { createClient, gatewayPort, httpRequest, obtainToken } from "./Auth.ts"
import { issueSource, LEASE, PROPERTY, prospectPartner, provisionedOwner } from "./Prospects.ts"
import { postBatch, query, type RosterPartner } from "./Roster.ts"
import { eventually, readRawStream } from "./Streams.ts"

/** The `ProspectUpdate` mapping of the issue's example, for a payload shaped like `prospectUpdate` below. */
export const PROSPECT_UPDATE_MAPPING = {
  ProspectUpdate: {
    source_prospect_id: "/id",
    pms_property_id: "/property/code",
    occurred_at: "/updated_at",
    first_name: "/applicant/first_name",
    last_name: "/applicant/last_name",
    email: "/applicant/email",
    phone: "/applicant/phone",
    earliest_move_in_date: "/move_in",
  },
}

/** A `ProspectUpdate` payload in the partner's own field names. */
export const prospectUpdate = (id: string, updatedAt: string, overrides: Record<string, unknown> = {}) => ({
  id,
  property: { code: "pms-prop-1" },
  updated_at: updatedAt,
  applicant: { first_name: "Jane", last_name: "Roe", email: "jane@example.com", phone: "5551234567" },
  move_in: "2026-03-01",
  ...overrides,
})

export interface IngestClient {
  readonly clientId: string
  readonly token: string
}

/** An ingestion client of `source` granted `owners`, with a real token from the ingestion gateway. */
export const ingestClient = (source: string, owners: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const client = yield* createClient({ gateway: "ingest", owners, source })
    return { clientId: client.clientId, token: yield* obtainToken("ingest", client) } satisfies IngestClient
  })

/** The source's mappings become `mapping`, as `sources mapping set` makes them. */
export const setMapping = (source: string, mapping: unknown) =>
  Effect.flatMap(Effect.service(Ingest), (ingest) => ingest.setMapping(source, mapping)).pipe(Effect.orDie)

/** `POST /events` on the ingestion gateway. */
export const postEvent = (client: IngestClient, body: unknown) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(yield* gatewayPort("ingest-api"), "/events", {
      method: "POST",
      headers: { authorization: `Bearer ${client.token}`, "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    })
    return { status: answer.status, text: answer.text, headers: answer.headers }
  })

/** Every INGEST message as JetStream stores it. */
export const ingestStream = readRawStream("INGEST")

/** The INGEST messages of one source. */
export const sourceMessages = (source: string) =>
  Effect.map(ingestStream, (messages) => messages.filter((m) => m.subject.startsWith(`ingest.${source}.`)))

/** JSON with object keys sorted and no spacing: the canonical form the event id is a hash of. */
const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : typeof value === "object" && value !== null
      ? `{${Object.keys(value)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
          .join(",")}}`
      : JSON.stringify(value)

/** sha256 (hex) of the canonical (source, event_type, payload), computed here independently of the service. */
export const expectedEventId = (source: string, eventType: string, payload: unknown) =>
  createHash("sha256")
    .update(canonicalJson([source, eventType, payload]))
    .digest("hex")

/** The subject an event of this prospect must be stored on. */
export const expectedSubject = (source: string, eventType: string, sourceProspectId: string) =>
  `ingest.${source}.${eventType}.${partitionOf(`${source}/${sourceProspectId}`, 16)}`

export interface LogRow {
  readonly id: string
  readonly event_id: string
  readonly source: string
  readonly event_type: string
  readonly source_prospect_id: string | null
  readonly occurred_at: string | null
  readonly outcome: "applied" | "stale" | "duplicate" | "ignored" | "failed"
  readonly reason: string | null
  readonly prospect_id: string | null
  readonly stream_seq: string
}

/** The source's ingest log in the order it was written (log id). */
export const ingestLog = (source: string) =>
  query(
    (sql) => sql<Array<LogRow>>`
      select id::text, event_id, source, event_type, source_prospect_id,
             to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as occurred_at,
             outcome, reason, prospect_id::text, stream_seq::text
      from ingest_log where source = ${source} order by ingest_log.id`,
  ).pipe(Effect.map((rows): Array<LogRow> => [...rows]))

/** Polls the source's log until it holds a record of each event id; the whole log then. */
export const awaitLogged = (source: string, eventIds: ReadonlyArray<string>) =>
  eventually(ingestLog(source), (rows) => eventIds.every((id) => rows.some((r) => r.event_id === id)))

export interface ProspectRow {
  readonly id: string
  readonly owner_id: string
  readonly first_name: string | null
  readonly last_name: string | null
  readonly email: string | null
  readonly phone: string | null
  readonly lease_start_date: string | null
  readonly pms_property_id: string | null
  readonly status: string
  readonly version: number
  readonly last_event_at: string | null
}

/** Every stored prospect of the source with this id (0 or 1 if the key holds). */
export const prospectRows = (source: string, sourceProspectId: string) =>
  query(
    (sql) => sql<Array<ProspectRow>>`
      select id::text, owner_id::text, first_name, last_name, email, phone, lease_start_date::text,
             pms_property_id, status, version,
             to_char(last_event_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as last_event_at
      from prospects where source = ${source} and source_prospect_id = ${sourceProspectId}`,
  ).pipe(Effect.map((rows): Array<ProspectRow> => [...rows]))

export interface IngestSetUp {
  readonly partner: RosterPartner
  readonly slug: string
  readonly client: IngestClient
}

/**
 * A partner with a provisioned owner (building `pms-prop-1`), a source issued to it with the `ProspectUpdate`
 * mapping (or `mapping`), and an ingestion client of that source granted the owner.
 */
export const ingestSetUp = (org: string, source: string, mapping: unknown = PROSPECT_UPDATE_MAPPING) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    yield* issueSource({ code: source, clients: [partner.clientId] })
    const slug = yield* provisionedOwner(partner, org)
    const client = yield* ingestClient(source, [slug])
    yield* setMapping(source, mapping)
    return { partner, slug, client } satisfies IngestSetUp
  })

/** A `ProspectUpdate` envelope. */
export const envelope = (source: string, payload: unknown, eventType = "ProspectUpdate") => ({
  source,
  event_type: eventType,
  payload,
})

/** POSTs the event and returns its id; dies unless the gateway accepted it. */
export const send = (setUp: IngestSetUp, body: unknown) =>
  Effect.gen(function* () {
    const answer = yield* postEvent(setUp.client, body)
    if (answer.status !== 202)
      return yield* Effect.die(new Error(`event refused: ${answer.status} ${answer.text}`))
    return (JSON.parse(answer.text) as { event_id: string }).event_id
  })

/** The log record of one event, once it is there. */
export const logOf = (source: string, eventId: string) =>
  Effect.map(awaitLogged(source, [eventId]), (rows) => rows.find((r) => r.event_id === eventId)!)

export const outcomes = (rows: ReadonlyArray<LogRow>) => rows.map((r) => [r.event_id, r.outcome, r.reason])

/** The owner's one building (`prop-1`) gets another PMS property id. */
export const renameBuilding = (setUp: IngestSetUp, slug: string, pmsPropertyId: string) =>
  Effect.gen(function* () {
    const batch = yield* postBatch(setUp.partner, slug, "properties", [
      { ...PROPERTY, pms_property_id: pmsPropertyId },
    ])
    assert.strictEqual(batch.results[0]!.action, "updated", JSON.stringify(batch.results))
  })

/** A payload in the partner's names carrying every field the spec requires, and its mapping. */
export const FULL_MAPPING = {
  ProspectUpdate: {
    source_prospect_id: "/id",
    pms_property_id: "/property/code",
    pms_unit_id: "/unit/code",
    occurred_at: "/updated_at",
    first_name: "/applicant/first_name",
    last_name: "/applicant/last_name",
    email: "/applicant/email",
    phone: "/applicant/phone",
    birthdate: "/applicant/birthdate",
    has_ssn: "/applicant/has_ssn",
    employment_status: "/applicant/employment",
    yearly_income: "/applicant/income",
    screening_result: "/screening/result",
    earliest_move_in_date: "/lease/move_in",
    lease_end_date: "/lease/end",
    monthly_rent_cents: "/lease/rent",
    deposit_amount_cents: "/lease/deposit",
    terms_accepted_at: "/terms_accepted_at",
    authorized_members: "/members",
  },
}
export const fullPayload = (id: string, updatedAt: string) => ({
  id,
  property: { code: "pms-prop-1" },
  unit: { code: "pms-unit-1" },
  updated_at: updatedAt,
  applicant: {
    first_name: "Ana",
    last_name: "Full",
    email: "ana@example.com",
    phone: "5557654321",
    birthdate: "1991-02-03",
    has_ssn: true,
    employment: "employed",
    income: 90000,
  },
  screening: { result: "approved" },
  lease: { move_in: LEASE.start, end: LEASE.end, rent: 200000, deposit: 250000 },
  terms_accepted_at: "2025-01-15T10:30:00Z",
  members: [],
})

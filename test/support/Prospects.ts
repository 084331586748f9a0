import { Effect } from "effect"
import { Sources } from "../../backend/prospects/Sources.ts"
import { authEnv, authService, gatewayPort, httpRequest, obtainToken, createClient } from "./Auth.ts"
import { createOwnerThroughApi, postBatch, postJson, postOwner, type RosterPartner } from "./Roster.ts"
import { eventually } from "./Streams.ts"

export const ENROLLMENT_HOST = "https://enroll.test"

/** The partner gateway with the workers (outbox relay, eligibility actor) on an isolated database and prefix. */
export const prospectService = (overrides: Record<string, string> = {}) =>
  authService({
    env: authEnv({ ROLES: "partner-api,ingest-api,workers", ENROLLMENT_HOST, ...overrides }),
  })

/** A partner client with every partner scope (or `scopes`) and a real token. */
export const prospectPartner = (scopes?: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const client = yield* createClient({ gateway: "partner", ...(scopes ? { scopes } : {}) })
    return { ...client, token: yield* obtainToken("partner", client) } satisfies RosterPartner
  })

/** A source code issued as the operator's CLI issues it, usable by `clients`. */
export const issueSource = (input: {
  readonly code: string
  readonly flow?: "embedded" | "expedited"
  readonly optionalIngestFields?: boolean
  readonly redirectDomains?: ReadonlyArray<string>
  readonly clients: ReadonlyArray<string>
}) =>
  Effect.flatMap(Effect.service(Sources), (sources) =>
    sources.create({
      code: input.code,
      flow: input.flow ?? "embedded",
      optionalIngestFields: input.optionalIngestFields,
      redirectDomains: input.redirectDomains,
      clients: input.clients,
    }),
  ).pipe(Effect.orDie)

export const PROPERTY = {
  external_system_id: "prop-1",
  building_name: "Main Tower",
  address: { line_one: "123 Main St", city: "Springfield", state: "IL", zip: "62701" },
  pms_type: "yardi",
  pms_property_id: "pms-prop-1",
}
export const UNIT = {
  external_system_id: "unit-1",
  property_external_id: "prop-1",
  name: "4B",
  pms_unit_id: "pms-unit-1",
}

/**
 * An owner provisioned the way the spec orders it (owner, bank account, property and unit, activation), with
 * `options` on the owner; its slug.
 */
export const provisionedOwner = (
  partner: RosterPartner,
  externalOrgId: string,
  options: { readonly active?: boolean; readonly owner?: Record<string, unknown> } = {},
) =>
  Effect.gen(function* () {
    const slug = yield* createOwnerThroughApi(partner, {
      external_org_id: externalOrgId,
      name: `Owner ${externalOrgId}`,
      ...options.owner,
    })
    yield* postBatch(partner, slug, "bank_accounts", [
      {
        external_system_id: "ba-1",
        display_name: "Operating",
        routing_number: "021000021",
        account_number: "123456789",
      },
    ])
    yield* postBatch(partner, slug, "properties", [PROPERTY])
    yield* postBatch(partner, slug, "units", [UNIT])
    if (options.active ?? true) {
      yield* postOwner(partner, { external_org_id: externalOrgId, purchase_flow_enabled: true })
    }
    return slug
  })

/**
 * A twelve-month lease that holds today: it began on the first of the month nine months ago (UTC), so a prospect
 * made of it stays eligible whatever day the suite runs.
 */
export const LEASE = (() => {
  const now = new Date()
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 9, 1))
  const end = new Date(Date.UTC(start.getUTCFullYear() + 1, start.getUTCMonth(), 0))
  return { start: start.toISOString().slice(0, 10), end: end.toISOString().slice(0, 10) }
})()

/** Every field the spec requires, for a renter at the provisioned property and unit. */
export const completeProspect = (
  source: string,
  sourceProspectId: string,
  overrides: Record<string, unknown> = {},
) => ({
  source,
  source_prospect_id: sourceProspectId,
  email: "renter@example.com",
  phone: "5559876543",
  first_name: "John",
  last_name: "Doe",
  birthdate: "1990-05-15",
  lease_start_date: LEASE.start,
  lease_end_date: LEASE.end,
  monthly_rent_cents: 200000,
  deposit_amount_cents: 250000,
  screening_result: "approved",
  employment_status: "employed",
  yearly_income: 95000,
  has_ssn: true,
  terms_accepted_at: "2025-01-15T10:30:00Z",
  authorized_members: [],
  pms_type: "yardi",
  pms_property_id: "pms-prop-1",
  pms_unit_id: "pms-unit-1",
  pms_prospect_id: "prospect-789",
  ...overrides,
})

export interface ProspectBody {
  readonly status_code: number
  readonly prospect: Record<string, unknown> & { readonly status: string; readonly id: number }
  readonly property?: Record<string, unknown>
  readonly unit?: Record<string, unknown>
}

/** `POST /partners/{slug}/prospects` with `{"prospect": prospect}`. */
export const postProspect = (partner: RosterPartner, slug: string, prospect: unknown) =>
  postJson<ProspectBody>(partner, `/partners/${slug}/prospects`, { prospect })

/** `GET /partners/{slug}/prospects/{source}/{id}`, the answer parsed. */
export const getProspect = (partner: RosterPartner, slug: string, source: string, sourceProspectId: string) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(
      yield* gatewayPort("partner-api"),
      `/partners/${slug}/prospects/${encodeURIComponent(source)}/${encodeURIComponent(sourceProspectId)}`,
      { headers: { authorization: `Bearer ${partner.token}` } },
    )
    return { status: answer.status, text: answer.text, body: JSON.parse(answer.text) as ProspectBody }
  })

/** Polls the prospect until `check` holds (the test's timeout bounds it); the last body. */
export const awaitProspect = (
  partner: RosterPartner,
  slug: string,
  source: string,
  sourceProspectId: string,
  check: (prospect: ProspectBody["prospect"]) => boolean = (p) => p.status === "ready",
) =>
  eventually(
    getProspect(partner, slug, source, sourceProspectId),
    (answer) => answer.status === 200 && check(answer.body.prospect),
  ).pipe(Effect.map((answer) => answer.body.prospect))

/** A partner with every scope, a source issued to it and an owner provisioned by it: what most tests start with. */
export const prospectSetUp = (
  externalOrgId: string,
  source: string,
  options: { readonly flow?: "embedded" | "expedited"; readonly optionalIngestFields?: boolean } = {},
) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    yield* issueSource({ code: source, clients: [partner.clientId], ...options })
    const slug = yield* provisionedOwner(partner, externalOrgId)
    return { partner, slug }
  })

import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { gatewayPort, httpRequest } from "./Auth.ts"
import {
  getProspect,
  issueSource,
  postProspect,
  type ProspectBody,
  prospectPartner,
  provisionedOwner,
} from "./Prospects.ts"
import { query, type RosterPartner } from "./Roster.ts"

/** The published 422 for a phone that is not exactly 10 digits. */
export const PHONE_NOT_VALID = `{"status_code":422,"error":"Prospect invalid.","prospect":{"phone":"Phone is not valid"},"errors":{"phone":["Phone is not valid"]}}`
/** The published 422 for a source that was never issued (or not to these credentials). */
export const SOURCE_INVALID =
  `{"status_code":422,"error":"Prospect invalid.","prospect":` +
  `{"source":"Source is not included in the list","enrollment_source":"Enrollment source must exist"},` +
  `"errors":{"source":["Source is not included in the list"],"enrollment_source":["Enrollment source must exist"]}}`
export const PROSPECT_NOT_FOUND = `{"status_code":404,"error":"Prospect not found."}`

/** Every field the spec requires on every source ("all fields above except the three"), key excluded. */
export const REQUIRED_ON_EVERY_SOURCE = [
  "email",
  "phone",
  "first_name",
  "last_name",
  "birthdate",
  "lease_start_date",
  "lease_end_date",
  "monthly_rent_cents",
  "deposit_amount_cents",
  "has_ssn",
  "terms_accepted_at",
  "authorized_members",
] as const
/** Required unless the source is configured for optional ingest fields. */
export const OPTIONAL_ON_SOME_SOURCES = ["screening_result", "employment_status", "yearly_income"] as const

/** The keys the published POST/GET response requires on `prospect`. */
export const PUBLISHED_PROSPECT_KEYS = [
  "id",
  "source",
  "source_prospect_id",
  "email",
  "phone",
  "first_name",
  "last_name",
  "lease_start_date",
  "lease_end_date",
  "screening_result",
  "monthly_rent_cents",
  "birthdate",
  "employment_status",
  "yearly_income",
  "has_ssn",
  "pms_type",
  "pms_property_id",
  "pms_unit_id",
  "pms_prospect_id",
  "deposit_amount_cents",
  "effective_coverage_amount_cents",
  "percent_savings",
  "enrollment_url",
  "offered_products",
  "status",
  "application_submitted",
  "latest_coverage",
]

export interface InvalidBody {
  readonly status_code: number
  readonly error: string
  readonly prospect: Record<string, string>
}

/** Numbers names apart within one test file (each file has a database of its own). */
export let counter = 0
export const nextId = () => ++counter

/** A fresh partner, a source issued to it (its own code) and an owner provisioned and activated by it. */
export const setup = (options: { readonly optionalIngestFields?: boolean } = {}) =>
  Effect.gen(function* () {
    const n = nextId()
    const partner = yield* prospectPartner()
    const source = `fields_${n}`
    yield* issueSource({
      code: source,
      clients: [partner.clientId],
      ...(options.optionalIngestFields === undefined
        ? {}
        : { optionalIngestFields: options.optionalIngestFields }),
    })
    const slug = yield* provisionedOwner(partner, `org-fields-${n}`)
    return { partner, slug, source }
  })

/** How many prospects the owner has in the database. */
export const prospectsOfOwner = (slug: string) =>
  query(
    (sql) => sql<Array<{ n: number }>>`
      select count(*)::int as n from prospects p join owners o on o.id = p.owner_id where o.slug = ${slug}`,
  ).pipe(Effect.map((rows) => rows[0]!.n))

/** The stored row as the database holds it, to tell that a refused write changed nothing. */
export const storedRow = (source: string, sourceProspectId: string) =>
  query(
    (sql) => sql`
      select * from prospects where source = ${source} and source_prospect_id = ${sourceProspectId}`,
  ).pipe(Effect.map((rows) => JSON.stringify(rows)))

/** The prospect was never written: GET says the published 404 and the database holds nothing for the owner. */
export const assertNothingStored = (
  partner: RosterPartner,
  slug: string,
  source: string,
  sourceProspectId: string,
) =>
  Effect.gen(function* () {
    const got = yield* getProspect(partner, slug, source, sourceProspectId)
    assert.strictEqual(got.status, 404, got.text)
    assert.strictEqual(got.text, PROSPECT_NOT_FOUND)
    assert.strictEqual(yield* prospectsOfOwner(slug), 0)
  })

/** POSTs `prospect`, expects HTTP 200, and returns the body. */
export const accepted = (partner: RosterPartner, slug: string, prospect: unknown) =>
  Effect.gen(function* () {
    const answer = yield* postProspect(partner, slug, prospect)
    assert.strictEqual(answer.status, 200, answer.text)
    assert.notStrictEqual(answer.body.prospect, undefined, answer.text)
    return answer.body
  })

/** POSTs `prospect`, expects the 422 "Prospect invalid." and returns its messages per field. */
export const refused = (partner: RosterPartner, slug: string, prospect: unknown) =>
  Effect.gen(function* () {
    const answer = yield* postProspect(partner, slug, prospect)
    assert.strictEqual(answer.status, 422, `${JSON.stringify(prospect)} -> ${answer.text}`)
    const body = JSON.parse(answer.text) as InvalidBody
    assert.strictEqual(body.status_code, 422, answer.text)
    assert.strictEqual(body.error, "Prospect invalid.", answer.text)
    assert.isObject(body.prospect, answer.text)
    return { fields: body.prospect, text: answer.text }
  })

/** "monthly_rent_cents" -> "Monthly rent cents": how a message about the field starts. */
export const humanized = (field: string) => {
  const words = field.replaceAll("_", " ")
  return words.charAt(0).toUpperCase() + words.slice(1)
}

/** A refusal naming exactly `field`, with a sentence about it. */
export const assertNamesOnly = (fields: Record<string, string>, field: string, text: string) => {
  assert.deepStrictEqual(Object.keys(fields), [field], text)
  assert.isString(fields[field], text)
  assert.isTrue(fields[field]!.startsWith(`${humanized(field)} `), `${field}: ${fields[field]}`)
}

/** A raw POST to the prospects route, to send bodies that are not `{"prospect": {...}}` or not JSON at all. */
export const rawPost = (partner: RosterPartner, slug: string, body: string) =>
  Effect.gen(function* () {
    return yield* httpRequest(yield* gatewayPort("partner-api"), `/partners/${slug}/prospects`, {
      method: "POST",
      headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
      body,
    })
  })

export const sortedStrings = (value: unknown) => [...(value as ReadonlyArray<string>)].sort()

/** Fields whose value a create returns as sent (SSN excluded: it is never returned). */
export const assertCarries = (prospect: ProspectBody["prospect"], sent: Record<string, unknown>) => {
  for (const [field, value] of Object.entries(sent)) {
    assert.deepStrictEqual(prospect[field], value, field)
  }
}

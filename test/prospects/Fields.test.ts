import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FORBIDDEN, gatewayPort, httpRequest, obtainToken, OWNER_NOT_FOUND } from "../support/Auth.ts"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  issueSource,
  postProspect,
  type ProspectBody,
  prospectPartner,
  prospectService,
  provisionedOwner,
} from "../support/Prospects.ts"
import { createOwnerThroughApi, postBatch, query, type RosterPartner } from "../support/Roster.ts"

const service = prospectService()

/** The published 422 for a phone that is not exactly 10 digits. */
const PHONE_NOT_VALID = `{"status_code":422,"error":"Prospect invalid.","prospect":{"phone":"Phone is not valid"},"errors":{"phone":["Phone is not valid"]}}`
/** The published 422 for a source that was never issued (or not to these credentials). */
const SOURCE_INVALID =
  `{"status_code":422,"error":"Prospect invalid.","prospect":` +
  `{"source":"Source is not included in the list","enrollment_source":"Enrollment source must exist"},` +
  `"errors":{"source":["Source is not included in the list"],"enrollment_source":["Enrollment source must exist"]}}`
const PROSPECT_NOT_FOUND = `{"status_code":404,"error":"Prospect not found."}`

/** Every field the spec requires on every source ("all fields above except the three"), key excluded. */
const REQUIRED_ON_EVERY_SOURCE = [
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
const OPTIONAL_ON_SOME_SOURCES = ["screening_result", "employment_status", "yearly_income"] as const

/** The keys the published POST/GET response requires on `prospect`. */
const PUBLISHED_PROSPECT_KEYS = [
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

interface InvalidBody {
  readonly status_code: number
  readonly error: string
  readonly prospect: Record<string, string>
}

let counter = 0

/** A fresh partner, a source issued to it (its own code) and an owner provisioned and activated by it. */
const setup = (options: { readonly optionalIngestFields?: boolean } = {}) =>
  Effect.gen(function* () {
    const n = ++counter
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
const prospectsOfOwner = (slug: string) =>
  query(
    (sql) => sql<Array<{ n: number }>>`
      select count(*)::int as n from prospects p join owners o on o.id = p.owner_id where o.slug = ${slug}`,
  ).pipe(Effect.map((rows) => rows[0]!.n))

/** The stored row as the database holds it, to tell that a refused write changed nothing. */
const storedRow = (source: string, sourceProspectId: string) =>
  query(
    (sql) => sql`
      select * from prospects where source = ${source} and source_prospect_id = ${sourceProspectId}`,
  ).pipe(Effect.map((rows) => JSON.stringify(rows)))

/** The prospect was never written: GET says the published 404 and the database holds nothing for the owner. */
const assertNothingStored = (
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
const accepted = (partner: RosterPartner, slug: string, prospect: unknown) =>
  Effect.gen(function* () {
    const answer = yield* postProspect(partner, slug, prospect)
    assert.strictEqual(answer.status, 200, answer.text)
    assert.notStrictEqual(answer.body.prospect, undefined, answer.text)
    return answer.body
  })

/** POSTs `prospect`, expects the 422 "Prospect invalid." and returns its messages per field. */
const refused = (partner: RosterPartner, slug: string, prospect: unknown) =>
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
const humanized = (field: string) => {
  const words = field.replaceAll("_", " ")
  return words.charAt(0).toUpperCase() + words.slice(1)
}

/** A refusal naming exactly `field`, with a sentence about it. */
const assertNamesOnly = (fields: Record<string, string>, field: string, text: string) => {
  assert.deepStrictEqual(Object.keys(fields), [field], text)
  assert.isString(fields[field], text)
  assert.isTrue(fields[field]!.startsWith(`${humanized(field)} `), `${field}: ${fields[field]}`)
}

/** A raw POST to the prospects route, to send bodies that are not `{"prospect": {...}}` or not JSON at all. */
const rawPost = (partner: RosterPartner, slug: string, body: string) =>
  Effect.gen(function* () {
    return yield* httpRequest(yield* gatewayPort("partner-api"), `/partners/${slug}/prospects`, {
      method: "POST",
      headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
      body,
    })
  })

const sortedStrings = (value: unknown) => [...(value as ReadonlyArray<string>)].sort()

/** Fields whose value a create returns as sent (SSN excluded: it is never returned). */
const assertCarries = (prospect: ProspectBody["prospect"], sent: Record<string, unknown>) => {
  for (const [field, value] of Object.entries(sent)) {
    assert.deepStrictEqual(prospect[field], value, field)
  }
}

describe("prospect fields over HTTP", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "a create answers HTTP 200 with status_code 201 and the prospect; resending answers 200/200",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const sent = completeProspect(source, "p-create")

          const created = yield* postProspect(partner, slug, sent)
          assert.strictEqual(created.status, 200, created.text)
          assert.strictEqual(created.body.status_code, 201)
          assert.isTrue(Number.isInteger(created.body.prospect.id))
          assert.strictEqual(created.body.prospect.status, "processing")
          assertCarries(created.body.prospect, sent)
          for (const key of PUBLISHED_PROSPECT_KEYS) assert.property(created.body.prospect, key)
          assert.notProperty(created.body, "property")
          assert.notProperty(created.body, "unit")

          const updated = yield* postProspect(partner, slug, sent)
          assert.strictEqual(updated.status, 200, updated.text)
          assert.strictEqual(updated.body.status_code, 200)
          assert.strictEqual(updated.body.prospect.id, created.body.prospect.id)
          assertCarries(updated.body.prospect, sent)
          assert.strictEqual(yield* prospectsOfOwner(slug), 1)

          const got = yield* getProspect(partner, slug, source, "p-create")
          assert.strictEqual(got.status, 200, got.text)
          assert.strictEqual(got.body.status_code, 200)
          assert.strictEqual(got.body.prospect.id, created.body.prospect.id)
          assertCarries(got.body.prospect, sent)
          for (const key of PUBLISHED_PROSPECT_KEYS) assert.property(got.body.prospect, key)

          const ready = yield* awaitProspect(partner, slug, source, "p-create")
          assert.strictEqual(ready.status, "ready")
          assertCarries(ready, sent)
        }),
    )

    it.effect("the POST returns the prospect as GET then shows it", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        // Incomplete (no yearly_income), so no eligibility decision moves it between the two reads.
        const sent = completeProspect(source, "p-same", {
          yearly_income: undefined,
          citizenship: "non_us",
          education_level: "masters_degree",
          authorized_members: [
            { first_name: "Ann", last_name: "Roe", email: "ann@example.com", phone: null },
          ],
        })
        const posted = yield* accepted(partner, slug, sent)
        assert.strictEqual(posted.prospect.status, "incomplete")
        const got = yield* getProspect(partner, slug, source, "p-same")
        assert.strictEqual(got.status, 200, got.text)
        assert.deepStrictEqual(got.body.prospect, posted.prospect)
      }),
    )

    it.effect(
      "a timestamp with an offset and fractions reads back as the same instant from POST and GET",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const sent = "2025-01-15T12:30:00.250+02:00"
          const posted = yield* accepted(
            partner,
            slug,
            completeProspect(source, "p-instant", { yearly_income: undefined, terms_accepted_at: sent }),
          )
          const got = yield* getProspect(partner, slug, source, "p-instant")
          const postedValue = posted.prospect.terms_accepted_at as string
          const gotValue = got.body.prospect.terms_accepted_at as string
          assert.strictEqual(Date.parse(postedValue), Date.parse(sent), `POST returned ${postedValue}`)
          assert.strictEqual(Date.parse(gotValue), Date.parse(sent), `GET returned ${gotValue}`)
          assert.strictEqual(gotValue, postedValue)
        }),
    )

    it.effect(
      "a phone that is not exactly 10 digits is refused with 'Phone is not valid' and nothing is stored",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const phones: ReadonlyArray<unknown> = [
            "555987654",
            "55598765430",
            "(555) 987-6543",
            "555-987-6543",
            "555.987.6543",
            "555 987 6543",
            "+15559876543",
            "15559876543",
            "+1 555 987 6543",
            " 5559876543",
            "5559876543 ",
            "555987654a",
            "",
            5559876543,
            true,
            ["5559876543"],
            { number: "5559876543" },
          ]
          for (const [index, phone] of phones.entries()) {
            const id = `p-phone-${index}`
            const answer = yield* postProspect(partner, slug, completeProspect(source, id, { phone }))
            assert.strictEqual(answer.status, 422, `${JSON.stringify(phone)} -> ${answer.text}`)
            assert.strictEqual(answer.text, PHONE_NOT_VALID, JSON.stringify(phone))
            yield* assertNothingStored(partner, slug, source, id)
          }
          const ok = yield* accepted(
            partner,
            slug,
            completeProspect(source, "p-phone-ok", { phone: "0000000000" }),
          )
          assert.strictEqual(ok.prospect.phone, "0000000000")
        }),
    )

    it.effect("a refused phone leaves an existing prospect unchanged, whatever else the POST carried", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        yield* accepted(partner, slug, completeProspect(source, "p-keep"))
        yield* awaitProspect(partner, slug, source, "p-keep")
        const before = yield* getProspect(partner, slug, source, "p-keep")
        const rowBefore = yield* storedRow(source, "p-keep")

        const answer = yield* postProspect(partner, slug, {
          source,
          source_prospect_id: "p-keep",
          first_name: "Changed",
          monthly_rent_cents: 1,
          authorized_members: [{ first_name: "New", last_name: "Member" }],
          phone: "(555) 987-6543",
        })
        assert.strictEqual(answer.status, 422, answer.text)
        assert.strictEqual(answer.text, PHONE_NOT_VALID)

        const after = yield* getProspect(partner, slug, source, "p-keep")
        assert.deepStrictEqual(after.body, before.body)
        assert.strictEqual(yield* storedRow(source, "p-keep"), rowBefore)
      }),
    )

    it.effect("dates must be calendar dates written YYYY-MM-DD; the refusal names the field", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const badDates: ReadonlyArray<unknown> = [
          "2025-02-30",
          "2023-02-29",
          "2025-13-01",
          "2025-00-10",
          "15/05/1990",
          "05/15/1990",
          "1990-5-15",
          "19900515",
          "1990-05-15T00:00:00Z",
          "May 15, 1990",
          "",
          19900515,
        ]
        let n = 0
        for (const field of ["birthdate", "lease_start_date", "lease_end_date"]) {
          for (const value of badDates) {
            const id = `p-date-${n++}`
            const { fields, text } = yield* refused(
              partner,
              slug,
              completeProspect(source, id, { [field]: value }),
            )
            assertNamesOnly(fields, field, text)
            if (typeof value === "string" && value !== "") {
              assert.strictEqual(fields[field], `${humanized(field)} is not a valid date (YYYY-MM-DD)`)
            }
            yield* assertNothingStored(partner, slug, source, id)
          }
        }
        const leap = yield* accepted(
          partner,
          slug,
          completeProspect(source, "p-leap", { birthdate: "2000-02-29", lease_start_date: "2028-02-29" }),
        )
        assert.strictEqual(leap.prospect.birthdate, "2000-02-29")
        assert.strictEqual(leap.prospect.lease_start_date, "2028-02-29")
      }),
    )

    it.effect("terms_accepted_at must be a timestamp; the refusal names the field", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const bad: ReadonlyArray<unknown> = [
          "2025-01-15",
          "yesterday",
          "2025-02-30T10:30:00Z",
          "2025-01-15T25:00:00Z",
          "2025-01-15T10:61:00Z",
          "15/01/2025 10:30",
          "",
          1736937000,
          true,
        ]
        for (const [index, value] of bad.entries()) {
          const id = `p-terms-${index}`
          const { fields, text } = yield* refused(
            partner,
            slug,
            completeProspect(source, id, { terms_accepted_at: value }),
          )
          assertNamesOnly(fields, "terms_accepted_at", text)
          yield* assertNothingStored(partner, slug, source, id)
        }
        for (const [index, value] of ["2025-01-15T10:30:00Z", "2025-01-15T05:30:00-05:00"].entries()) {
          const body = yield* accepted(
            partner,
            slug,
            completeProspect(source, `p-terms-ok-${index}`, { terms_accepted_at: value }),
          )
          assert.strictEqual(Date.parse(body.prospect.terms_accepted_at as string), Date.parse(value))
        }
      }),
    )

    it.effect("a timestamp whose offset the database cannot hold is a 422 or stored, never a 500", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const value = "2025-01-15T10:30:00+16:00"
        const answer = yield* postProspect(
          partner,
          slug,
          completeProspect(source, "p-offset", { terms_accepted_at: value }),
        )
        assert.notStrictEqual(answer.status, 500, answer.text)
        if (answer.status === 422) {
          assertNamesOnly((JSON.parse(answer.text) as InvalidBody).prospect, "terms_accepted_at", answer.text)
          yield* assertNothingStored(partner, slug, source, "p-offset")
        } else {
          assert.strictEqual(answer.status, 200, answer.text)
          const got = yield* getProspect(partner, slug, source, "p-offset")
          assert.strictEqual(Date.parse(got.body.prospect.terms_accepted_at as string), Date.parse(value))
        }
      }),
    )

    it.effect("cents and yearly income must be integers, not negative; the refusal names the field", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const bad: ReadonlyArray<unknown> = [1.5, -1, "100", "1e3", true, [100], { cents: 100 }]
        let n = 0
        for (const field of ["monthly_rent_cents", "deposit_amount_cents", "yearly_income"]) {
          for (const value of bad) {
            const id = `p-int-${n++}`
            const { fields, text } = yield* refused(
              partner,
              slug,
              completeProspect(source, id, { [field]: value }),
            )
            assertNamesOnly(fields, field, text)
            if (value === -1) assert.strictEqual(fields[field], `${humanized(field)} can't be negative`)
            yield* assertNothingStored(partner, slug, source, id)
          }
        }
        const zero = yield* accepted(
          partner,
          slug,
          completeProspect(source, "p-int-zero", { deposit_amount_cents: 0, yearly_income: 0 }),
        )
        assert.strictEqual(zero.prospect.deposit_amount_cents, 0)
        assert.strictEqual(zero.prospect.yearly_income, 0)
      }),
    )

    it.effect("typed fields refuse values of the wrong type or outside their published values", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const cases: ReadonlyArray<readonly [string, unknown]> = [
          ["has_ssn", "true"],
          ["has_ssn", 1],
          ["email", 42],
          ["email", "not an email"],
          ["first_name", 7],
          ["last_name", ["Doe"]],
          ["screening_result", "maybe"],
          ["employment_status", "working"],
          ["citizenship", "martian"],
          ["education_level", "kindergarten"],
          ["pms_type", "other"],
          ["authorized_members", "Ann Roe"],
          ["authorized_members", { first_name: "Ann", last_name: "Roe" }],
          ["social_security_number", "12345678"],
          ["social_security_number", "123-45-6789"],
          ["social_security_number", 123456789],
        ]
        for (const [index, [field, value]] of cases.entries()) {
          const id = `p-type-${index}`
          const { fields, text } = yield* refused(
            partner,
            slug,
            completeProspect(source, id, { [field]: value }),
          )
          assertNamesOnly(fields, field, text)
          yield* assertNothingStored(partner, slug, source, id)
        }
      }),
    )

    it.effect("several bad fields are reported together, each named, and nothing is stored", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const { fields, text } = yield* refused(
          partner,
          slug,
          completeProspect(source, "p-many", {
            phone: "+15559876543",
            birthdate: "1990-02-30",
            lease_end_date: "31/01/2027",
            monthly_rent_cents: 1.5,
            deposit_amount_cents: -1,
            yearly_income: "100",
            terms_accepted_at: "2025-01-15",
            has_ssn: "yes",
          }),
        )
        assert.deepStrictEqual(
          Object.keys(fields).sort(),
          [
            "birthdate",
            "deposit_amount_cents",
            "has_ssn",
            "lease_end_date",
            "monthly_rent_cents",
            "phone",
            "terms_accepted_at",
            "yearly_income",
          ],
          text,
        )
        assert.strictEqual(fields.phone, "Phone is not valid")
        assert.strictEqual(fields.birthdate, "Birthdate is not a valid date (YYYY-MM-DD)")
        assert.strictEqual(fields.deposit_amount_cents, "Deposit amount cents can't be negative")
        for (const [field, message] of Object.entries(fields)) {
          assert.isTrue(message.startsWith(`${humanized(field)} `), `${field}: ${message}`)
        }
        yield* assertNothingStored(partner, slug, source, "p-many")
      }),
    )

    it.effect(
      "without screening_result, employment_status and yearly_income a normal source's prospect is incomplete",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const omitted = yield* accepted(
            partner,
            slug,
            completeProspect(source, "p-ingest-omitted", {
              screening_result: undefined,
              employment_status: undefined,
              yearly_income: undefined,
            }),
          )
          assert.strictEqual(omitted.status_code, 201)
          assert.strictEqual(omitted.prospect.status, "incomplete")
          assert.deepStrictEqual(
            sortedStrings(omitted.prospect.missing_fields),
            [...OPTIONAL_ON_SOME_SOURCES].sort(),
          )
          assert.isNull(omitted.prospect.enrollment_url)
          assert.isNull(omitted.prospect.hosted_enrollment_url)

          const nulled = yield* accepted(
            partner,
            slug,
            completeProspect(source, "p-ingest-null", {
              screening_result: null,
              employment_status: null,
              yearly_income: null,
            }),
          )
          assert.strictEqual(nulled.prospect.status, "incomplete")
          assert.deepStrictEqual(
            sortedStrings(nulled.prospect.missing_fields),
            [...OPTIONAL_ON_SOME_SOURCES].sort(),
          )

          const got = yield* getProspect(partner, slug, source, "p-ingest-omitted")
          assert.strictEqual(got.body.prospect.status, "incomplete")
          assert.deepStrictEqual(
            sortedStrings(got.body.prospect.missing_fields),
            [...OPTIONAL_ON_SOME_SOURCES].sort(),
          )
        }),
    )

    it.effect(
      "a source configured for optional ingest fields does not require the three; it still checks them",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup({ optionalIngestFields: true })
          const posted = yield* accepted(
            partner,
            slug,
            completeProspect(source, "p-optional", {
              screening_result: undefined,
              employment_status: undefined,
              yearly_income: undefined,
            }),
          )
          assert.strictEqual(posted.status_code, 201)
          assert.strictEqual(posted.prospect.status, "processing")
          assert.deepStrictEqual(posted.prospect.missing_fields, [])
          assert.isNull(posted.prospect.screening_result)
          assert.isNull(posted.prospect.employment_status)
          assert.isNull(posted.prospect.yearly_income)
          const ready = yield* awaitProspect(partner, slug, source, "p-optional")
          assert.strictEqual(ready.status, "ready")
          assert.deepStrictEqual(ready.missing_fields, [])

          // The other required fields stay required on such a source.
          const noBirthdate = yield* accepted(
            partner,
            slug,
            completeProspect(source, "p-optional-2", {
              screening_result: undefined,
              employment_status: undefined,
              yearly_income: undefined,
              birthdate: undefined,
            }),
          )
          assert.strictEqual(noBirthdate.prospect.status, "incomplete")
          assert.deepStrictEqual(noBirthdate.prospect.missing_fields, ["birthdate"])

          // Optional does not mean unchecked.
          for (const [field, value] of [
            ["yearly_income", -1],
            ["screening_result", "maybe"],
            ["employment_status", "working"],
          ] as const) {
            const { fields, text } = yield* refused(
              partner,
              slug,
              completeProspect(source, `p-optional-bad-${field}`, { [field]: value }),
            )
            assertNamesOnly(fields, field, text)
          }
        }),
    )

    it.effect("omitting any one required field stores the prospect incomplete with that field missing", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const complete = completeProspect(source, "unused") as Record<string, unknown>
        for (const field of [...REQUIRED_ON_EVERY_SOURCE, ...OPTIONAL_ON_SOME_SOURCES]) {
          for (const how of ["omitted", "null"] as const) {
            const id = `p-req-${field}-${how}`
            const body = yield* accepted(
              partner,
              slug,
              completeProspect(source, id, { [field]: how === "null" ? null : undefined }),
            )
            assert.strictEqual(body.status_code, 201, `${field} ${how}`)
            assert.strictEqual(body.prospect.status, "incomplete", `${field} ${how}`)
            assert.deepStrictEqual(body.prospect.missing_fields, [field], `${field} ${how}`)
            assert.isNull(body.prospect.enrollment_url)
            assert.isNull(body.prospect.hosted_enrollment_url)
            assert.isNull(body.prospect[field], `${field} ${how}`)

            // "re-POST with the values": only the key and the missing value.
            const completed = yield* accepted(partner, slug, {
              source,
              source_prospect_id: id,
              [field]: complete[field],
            })
            assert.strictEqual(completed.status_code, 200, `${field} ${how}`)
            assert.strictEqual(completed.prospect.id, body.prospect.id)
            assert.notStrictEqual(completed.prospect.status, "incomplete", `${field} ${how}`)
            assert.deepStrictEqual(completed.prospect.missing_fields, [], `${field} ${how}`)
            assertCarries(completed.prospect, completeProspect(source, id))
          }
        }
        const all = yield* accepted(partner, slug, { source, source_prospect_id: "p-req-bare" })
        assert.strictEqual(all.prospect.status, "incomplete")
        assert.deepStrictEqual(
          sortedStrings(all.prospect.missing_fields),
          [...REQUIRED_ON_EVERY_SOURCE, ...OPTIONAL_ON_SOME_SOURCES].sort(),
        )
      }),
    )

    it.effect("source and source_prospect_id, the key, are refused when missing or not strings", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const prospect = completeProspect(source, "p-key") as Record<string, unknown>
        const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
          ["source_prospect_id", { ...prospect, source_prospect_id: undefined }],
          ["source_prospect_id", { ...prospect, source_prospect_id: null }],
          ["source_prospect_id", { ...prospect, source_prospect_id: 12 }],
          ["source", { ...prospect, source: undefined }],
          ["source", { ...prospect, source: null }],
        ]
        for (const [field, body] of cases) {
          const { fields, text } = yield* refused(partner, slug, body)
          assert.property(fields, field, text)
          assert.isTrue(fields[field]!.startsWith(`${humanized(field)} `), text)
        }
        assert.strictEqual(yield* prospectsOfOwner(slug), 0)
      }),
    )

    it.effect(
      "an omitted field keeps its value, null clears it, and authorized_members replaces the array",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const ann = { first_name: "Ann", last_name: "Roe", email: "ann@example.com", phone: "5551112222" }
          const bob = { first_name: "Bob", last_name: "Poe", email: "bob@example.com", phone: "5553334444" }
          const cat = { first_name: "Cat", last_name: "Loe", email: "cat@example.com", phone: "5555556666" }
          const sent = completeProspect(source, "p-merge", {
            authorized_members: [ann, bob],
            citizenship: "us_or_green_card",
            education_level: "bachelor_degree",
          })
          const key = { source, source_prospect_id: "p-merge" }
          yield* accepted(partner, slug, sent)

          const lastName = yield* accepted(partner, slug, { ...key, last_name: "Smith" })
          assert.strictEqual(lastName.status_code, 200)
          assert.strictEqual(lastName.prospect.status, "processing")
          assertCarries(lastName.prospect, { ...sent, last_name: "Smith" })

          const citizenship = yield* accepted(partner, slug, { ...key, citizenship: null })
          assert.isNull(citizenship.prospect.citizenship)
          assert.strictEqual(citizenship.prospect.education_level, "bachelor_degree")
          assert.strictEqual(citizenship.prospect.status, "processing")
          assertCarries(citizenship.prospect, { ...sent, last_name: "Smith", citizenship: null })

          const replaced = yield* accepted(partner, slug, { ...key, authorized_members: [cat] })
          assert.deepStrictEqual(replaced.prospect.authorized_members, [cat])
          const replacedGet = yield* getProspect(partner, slug, source, "p-merge")
          assert.deepStrictEqual(replacedGet.body.prospect.authorized_members, [cat])

          const reordered = yield* accepted(partner, slug, { ...key, authorized_members: [bob, ann] })
          assert.deepStrictEqual(reordered.prospect.authorized_members, [bob, ann])

          const emptied = yield* accepted(partner, slug, { ...key, authorized_members: [] })
          assert.deepStrictEqual(emptied.prospect.authorized_members, [])
          assert.strictEqual(emptied.prospect.status, "processing")

          const untouched = yield* accepted(partner, slug, { ...key, first_name: "Johnny" })
          assert.deepStrictEqual(untouched.prospect.authorized_members, [])

          const cleared = yield* accepted(partner, slug, { ...key, first_name: null })
          assert.isNull(cleared.prospect.first_name)
          assert.strictEqual(cleared.prospect.status, "incomplete")
          assert.deepStrictEqual(cleared.prospect.missing_fields, ["first_name"])
          assert.isNull(cleared.prospect.enrollment_url)
          assert.isNull(cleared.prospect.hosted_enrollment_url)
          assertCarries(cleared.prospect, {
            ...sent,
            last_name: "Smith",
            citizenship: null,
            authorized_members: [],
            first_name: null,
          })

          const membersCleared = yield* accepted(partner, slug, {
            ...key,
            first_name: "John",
            authorized_members: null,
          })
          assert.isNull(membersCleared.prospect.authorized_members)
          assert.strictEqual(membersCleared.prospect.status, "incomplete")
          assert.deepStrictEqual(membersCleared.prospect.missing_fields, ["authorized_members"])

          const got = yield* getProspect(partner, slug, source, "p-merge")
          assert.deepStrictEqual(got.body.prospect, membersCleared.prospect)
          assert.strictEqual(yield* prospectsOfOwner(slug), 1)
        }),
    )

    it.effect("an unknown source is refused with the published body and nothing is stored", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        for (const unknown of ["never-issued", source.toUpperCase(), `${source} `, "vero"]) {
          const answer = yield* postProspect(partner, slug, completeProspect(unknown, "p-unknown"))
          assert.strictEqual(answer.status, 422, `${unknown} -> ${answer.text}`)
          assert.strictEqual(answer.text, SOURCE_INVALID)
        }
        assert.strictEqual(yield* prospectsOfOwner(slug), 0)
        const got = yield* getProspect(partner, slug, "never-issued", "p-unknown")
        assert.strictEqual(got.status, 404, got.text)
        assert.strictEqual(got.text, PROSPECT_NOT_FOUND)
      }),
    )

    it.effect("a source that does not list the calling client is refused like an unknown one", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* setup()
        const other = yield* prospectPartner()
        const foreign = `fields_foreign_${++counter}`
        yield* issueSource({ code: foreign, clients: [other.clientId] })
        const unlisted = `fields_unlisted_${++counter}`
        yield* issueSource({ code: unlisted, clients: [] })
        for (const code of [foreign, unlisted]) {
          const answer = yield* postProspect(partner, slug, completeProspect(code, "p-foreign"))
          assert.strictEqual(answer.status, 422, answer.text)
          assert.strictEqual(answer.text, SOURCE_INVALID)
          yield* assertNothingStored(partner, slug, code, "p-foreign")
        }
        assert.strictEqual(
          (yield* query((sql) => sql`select 1 from prospects where source in (${foreign}, ${unlisted})`))
            .length,
          0,
        )
      }),
    )

    it.effect(
      "a source_prospect_id of another owner's prospect is a 422; GET through another owner is a 404",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const otherSlug = yield* createOwnerThroughApi(partner, {
            external_org_id: `org-fields-other-${++counter}`,
            name: "Other Owner",
          })
          yield* postBatch(partner, otherSlug, "bank_accounts", [
            {
              external_system_id: "ba-1",
              display_name: "Op",
              routing_number: "021000021",
              account_number: "987654321",
            },
          ])
          yield* accepted(partner, slug, completeProspect(source, "p-taken"))
          yield* awaitProspect(partner, slug, source, "p-taken")
          const before = yield* getProspect(partner, slug, source, "p-taken")
          const rowBefore = yield* storedRow(source, "p-taken")

          const { fields, text } = yield* refused(
            partner,
            otherSlug,
            completeProspect(source, "p-taken", { first_name: "Mallory" }),
          )
          assertNamesOnly(fields, "source_prospect_id", text)

          const notHers = yield* getProspect(partner, otherSlug, source, "p-taken")
          assert.strictEqual(notHers.status, 404, notHers.text)
          assert.strictEqual(notHers.text, PROSPECT_NOT_FOUND)
          assert.strictEqual(yield* prospectsOfOwner(otherSlug), 0)

          const after = yield* getProspect(partner, slug, source, "p-taken")
          assert.deepStrictEqual(after.body, before.body)
          assert.strictEqual(yield* storedRow(source, "p-taken"), rowBefore)
        }),
    )

    it.effect("GET finds a prospect whose source_prospect_id is percent-encoded in the path", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        // Any string is a partner's prospect identifier; getProspect encodes it with encodeURIComponent.
        for (const id of ["a b", "é-1", "a/b", "a?b", "a#b", "a%b", "a+b", "lead:42"]) {
          const posted = yield* accepted(
            partner,
            slug,
            completeProspect(source, id, { yearly_income: undefined }),
          )
          assert.strictEqual(posted.prospect.source_prospect_id, id)
          const got = yield* getProspect(partner, slug, source, id)
          assert.strictEqual(got.status, 200, `${JSON.stringify(id)} -> ${got.text}`)
          assert.strictEqual(got.body.prospect.source_prospect_id, id)
          assert.strictEqual(got.body.prospect.id, posted.prospect.id)
        }
      }),
    )

    it.effect("GET of a prospect that does not exist is the published 404", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        yield* accepted(partner, slug, completeProspect(source, "p-exists", { yearly_income: undefined }))
        for (const [code, id] of [
          [source, "p-missing"],
          ["never-issued", "p-exists"],
          [source, "P-EXISTS"],
        ] as const) {
          const got = yield* getProspect(partner, slug, code, id)
          assert.strictEqual(got.status, 404, `${code}/${id}: ${got.text}`)
          assert.strictEqual(got.text, PROSPECT_NOT_FOUND)
        }
      }),
    )

    it.effect("social_security_number is never returned and not stored in clear", () =>
      Effect.gen(function* () {
        const { partner, slug, source } = yield* setup()
        const ssn = "123456789"
        const sealed = () =>
          query(
            (sql) => sql<Array<{ social_security_number_sealed: Buffer | null }>>`
              select social_security_number_sealed from prospects
              where source = ${source} and source_prospect_id = 'p-ssn'`,
          ).pipe(Effect.map((rows) => rows[0]!.social_security_number_sealed))

        const posted = yield* postProspect(
          partner,
          slug,
          completeProspect(source, "p-ssn", { social_security_number: ssn }),
        )
        assert.strictEqual(posted.status, 200, posted.text)
        assert.notInclude(posted.text, ssn)
        assert.notProperty(posted.body.prospect, "social_security_number")
        assert.notProperty(posted.body.prospect, "social_security_number_sealed")

        const stored = yield* sealed()
        assert.isNotNull(stored)
        assert.isFalse(stored!.includes(Buffer.from(ssn)), "the sealed column holds the digits")
        assert.notInclude(stored!.toString("latin1"), ssn)
        assert.notInclude(stored!.toString("hex"), ssn)
        assert.notInclude(stored!.toString("base64"), Buffer.from(ssn).toString("base64"))
        const anyColumn = yield* query(
          (sql) => sql`select * from prospects where source = ${source} and source_prospect_id = 'p-ssn'`,
        )
        assert.notInclude(
          JSON.stringify(anyColumn, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString("hex") : v)),
          ssn,
        )

        const got = yield* getProspect(partner, slug, source, "p-ssn")
        assert.notInclude(got.text, ssn)
        assert.notProperty(got.body.prospect, "social_security_number")
        const ready = yield* awaitProspect(partner, slug, source, "p-ssn")
        assert.notProperty(ready, "social_security_number")
        assert.notInclude(JSON.stringify(ready), ssn)

        // Omitted keeps the sealed value; null clears it.
        const kept = yield* postProspect(partner, slug, {
          source,
          source_prospect_id: "p-ssn",
          last_name: "Roe",
        })
        assert.notInclude(kept.text, ssn)
        assert.deepStrictEqual(yield* sealed(), stored)
        yield* accepted(partner, slug, { source, source_prospect_id: "p-ssn", social_security_number: null })
        assert.isNull(yield* sealed())

        // A refused SSN is not echoed either.
        const bad = yield* postProspect(
          partner,
          slug,
          completeProspect(source, "p-ssn-bad", { social_security_number: "12345678X" }),
        )
        assert.strictEqual(bad.status, 422, bad.text)
        assert.notInclude(bad.text, "12345678X")
      }),
    )

    it.effect(
      'a body that is not {"prospect": {...}} is a 422, and one that is not JSON a 400, never a 500',
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const fields = JSON.stringify(completeProspect(source, "p-shape"))
          const notWrapped = [
            fields,
            "{}",
            `{"prospect":null}`,
            `{"prospect":[]}`,
            `{"prospect":"x"}`,
            `{"prospect":[${fields}]}`,
            `{"prospects":${fields}}`,
            `[${fields}]`,
            `[{"prospect":${fields}}]`,
            "null",
            "42",
            `"prospect"`,
          ]
          for (const body of notWrapped) {
            const answer = yield* rawPost(partner, slug, body)
            assert.strictEqual(answer.status, 422, `${body.slice(0, 40)} -> ${answer.text}`)
            const parsed = JSON.parse(answer.text) as InvalidBody
            assert.strictEqual(parsed.status_code, 422)
            assert.strictEqual(parsed.error, "Prospect invalid.")
            assert.isObject(parsed.prospect)
          }
          const notJson = [
            "",
            "{",
            `{"prospect":`,
            "prospect=1",
            "{'prospect': {}}",
            `{"prospect":{}}}`,
            "undefined",
          ]
          for (const body of notJson) {
            const answer = yield* rawPost(partner, slug, body)
            assert.strictEqual(answer.status, 400, `${JSON.stringify(body)} -> ${answer.text}`)
            const parsed = JSON.parse(answer.text) as { status_code: number; error: string }
            assert.strictEqual(parsed.status_code, 400)
            assert.isString(parsed.error)
          }
          assert.strictEqual(yield* prospectsOfOwner(slug), 0)
        }),
    )

    it.effect(
      "an unknown owner slug is a 404; an owner not granted to the caller a 403; nothing is stored",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          const unknown = yield* postProspect(partner, "no-such-owner", completeProspect(source, "p-slug"))
          assert.strictEqual(unknown.status, 404, unknown.text)
          assert.strictEqual(unknown.text, OWNER_NOT_FOUND)
          const unknownGet = yield* getProspect(partner, "no-such-owner", source, "p-slug")
          assert.strictEqual(unknownGet.status, 404, unknownGet.text)

          const stranger = yield* prospectPartner()
          const strangersSource = `fields_stranger_${++counter}`
          yield* issueSource({ code: strangersSource, clients: [stranger.clientId] })
          const denied = yield* postProspect(stranger, slug, completeProspect(strangersSource, "p-slug"))
          assert.strictEqual(denied.status, 403, denied.text)
          assert.strictEqual(denied.text, FORBIDDEN)
          yield* accepted(partner, slug, completeProspect(source, "p-owned", { yearly_income: undefined }))
          const deniedGet = yield* getProspect(stranger, slug, source, "p-owned")
          assert.strictEqual(deniedGet.status, 403, deniedGet.text)
          assert.strictEqual(deniedGet.text, FORBIDDEN)
          assert.strictEqual(yield* prospectsOfOwner(slug), 1)
          assert.strictEqual(
            (yield* query((sql) => sql`select 1 from prospects where source_prospect_id = 'p-slug'`)).length,
            0,
          )
        }),
    )

    it.effect(
      "a token without prospects:write gets 403 Forbidden on POST; one without prospects:read on GET",
      () =>
        Effect.gen(function* () {
          const { partner, slug, source } = yield* setup()
          yield* accepted(partner, slug, completeProspect(source, "p-scoped", { yearly_income: undefined }))
          const readOnly = { ...partner, token: yield* obtainToken("partner", partner, "prospects:read") }
          const writeOnly = { ...partner, token: yield* obtainToken("partner", partner, "prospects:write") }

          const post = yield* postProspect(readOnly, slug, completeProspect(source, "p-scoped-new"))
          assert.strictEqual(post.status, 403, post.text)
          assert.strictEqual(post.text, FORBIDDEN)
          const update = yield* postProspect(readOnly, slug, {
            source,
            source_prospect_id: "p-scoped",
            yearly_income: 1,
          })
          assert.strictEqual(update.status, 403, update.text)
          assert.strictEqual(update.text, FORBIDDEN)

          const readable = yield* getProspect(readOnly, slug, source, "p-scoped")
          assert.strictEqual(readable.status, 200, readable.text)
          assert.isNull(readable.body.prospect.yearly_income)
          const missing = yield* getProspect(readOnly, slug, source, "p-scoped-new")
          assert.strictEqual(missing.text, PROSPECT_NOT_FOUND)

          const get = yield* getProspect(writeOnly, slug, source, "p-scoped")
          assert.strictEqual(get.status, 403, get.text)
          assert.strictEqual(get.text, FORBIDDEN)
          const write = yield* postProspect(writeOnly, slug, {
            source,
            source_prospect_id: "p-scoped",
            yearly_income: 1,
          })
          assert.strictEqual(write.status, 200, write.text)
          assert.strictEqual(write.body.status_code, 200)
          assert.strictEqual(yield* prospectsOfOwner(slug), 1)
        }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  postProspect,
  prospectService,
} from "../support/Prospects.ts"
import {
  PHONE_NOT_VALID,
  type InvalidBody,
  setup,
  prospectsOfOwner,
  storedRow,
  assertNothingStored,
  accepted,
  refused,
  humanized,
  assertNamesOnly,
  rawPost,
} from "../support/ProspectFields.ts"

const service = prospectService()

describe("prospect fields refused over HTTP", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
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
  })
})

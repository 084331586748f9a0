import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { awaitProspect, completeProspect, getProspect, prospectService } from "../support/Prospects.ts"
import {
  REQUIRED_ON_EVERY_SOURCE,
  OPTIONAL_ON_SOME_SOURCES,
  setup,
  accepted,
  refused,
  assertNamesOnly,
  sortedStrings,
  assertCarries,
} from "../support/ProspectFields.ts"

const service = prospectService()

describe("prospect required fields", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
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
  })
})

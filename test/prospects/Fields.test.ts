import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  postProspect,
  prospectService,
} from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import {
  PROSPECT_NOT_FOUND,
  PUBLISHED_PROSPECT_KEYS,
  setup,
  prospectsOfOwner,
  accepted,
  assertCarries,
} from "../support/ProspectFields.ts"

const service = prospectService()

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
  })
})

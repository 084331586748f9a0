import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  postProspect,
  prospectService,
} from "../support/Prospects.ts"
import { postBatch } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"
import {
  setup,
  eventOf,
  payloadOf,
  prospectMessages,
  awaitEvents,
  subjects,
  createdBody,
  body,
  PMS,
  NO_URLS,
  embeddedUrls,
  post,
  awaitCreatedThenReady,
} from "../support/ProspectEvents.ts"

const service = prospectService()

describe("prospect status", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    describe("none -> processing -> ready", () => {
      it.effect(
        "a first POST with all required fields answers processing (status_code 201), emits prospect.created, then eligibility moves it to ready and emits prospect.ready",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-first")
            const posted = yield* post(partner, slug, completeProspect(source, "p-first"))
            assert.strictEqual(posted.status_code, 201)
            assert.strictEqual(posted.prospect.status, "processing")
            assert.strictEqual(posted.prospect.enrollment_url, null)
            assert.strictEqual(posted.prospect.hosted_enrollment_url, null)
            const id = posted.prospect.id

            const ready = yield* awaitProspect(partner, slug, source, "p-first")
            assert.strictEqual(ready.id, id, "eligibility decides the same record")
            assert.deepInclude(ready, embeddedUrls(slug, source, "p-first"))
            assert.notProperty(ready, "sdi_ineligibility_reasons", "omitted when nothing to report")
            assert.notProperty(ready, "cd_ineligibility_reasons", "omitted when nothing to report")

            const messages = yield* awaitEvents(slug, "p-first", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready"),
              "prospect.created comes before prospect.ready",
            )
            assert.isBelow(messages[0]!.seq, messages[1]!.seq)
            assert.deepStrictEqual(messages[0]!.json, createdBody(slug, "p-first"))
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${id}`,
                source_prospect_id: "p-first",
                status: "ready",
                ...embeddedUrls(slug, source, "p-first"),
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect("any outcome, including ineligible, ends in ready with prospect.ready", () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-denied")
          const posted = yield* post(
            partner,
            slug,
            completeProspect(source, "p-denied", {
              lease_start_date: "2019-01-01",
              lease_end_date: "2020-01-01",
            }),
          )
          assert.strictEqual(posted.prospect.status, "processing")
          const ready = yield* awaitProspect(partner, slug, source, "p-denied")
          assert.deepInclude(ready, NO_URLS)
          assert.include(ready.sdi_ineligibility_reasons as Array<string>, "Lease has already ended")
          yield* awaitCreatedThenReady(slug, "p-denied", posted.prospect.id, {
            ...NO_URLS,
            ...PMS,
            guarantor_coverage: false,
          })
        }),
      )

      it.effect(
        "every complete POST of a ready prospect decides it again: processing, then another prospect.ready, never a second prospect.created",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-again")
            const first = yield* post(partner, slug, completeProspect(source, "p-again"))
            yield* awaitEvents(slug, "p-again", 2)
            const again = yield* post(partner, slug, completeProspect(source, "p-again"))
            assert.strictEqual(again.status_code, 200, "an update, not a create")
            assert.strictEqual(again.prospect.id, first.prospect.id, "the same record")
            assert.strictEqual(again.prospect.status, "processing")
            const messages = yield* awaitEvents(slug, "p-again", 3)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready", "prospect.ready"),
            )
            assert.deepStrictEqual(messages[2]!.json, messages[1]!.json)
            assert.strictEqual((yield* awaitProspect(partner, slug, source, "p-again")).status, "ready")

            // A changed email is decided again too, and the new links carry it.
            const changed = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-again",
              email: "new.renter@example.com",
            })
            assert.strictEqual(changed.prospect.status, "processing")
            const redecided = yield* awaitEvents(slug, "p-again", 4)
            assert.deepStrictEqual(
              redecided.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready", "prospect.ready", "prospect.ready"),
            )
            assert.deepInclude(
              payloadOf(redecided[3]!),
              embeddedUrls(slug, source, "p-again", "new.renter%40example.com"),
            )
          }),
      )

      it.effect(
        "on a source configured for optional ingest fields, a prospect without screening_result, employment_status and yearly_income is complete",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-optional", { optionalIngestFields: true })
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-optional", {
                screening_result: undefined,
                employment_status: undefined,
                yearly_income: undefined,
              }),
            )
            assert.strictEqual(posted.prospect.status, "processing")
            const ready = yield* awaitProspect(partner, slug, source, "p-optional")
            assert.deepInclude(ready, embeddedUrls(slug, source, "p-optional"))
            const messages = yield* awaitEvents(slug, "p-optional", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready"),
            )
          }),
      )
    })

    describe("-> incomplete", () => {
      it.effect(
        "a first POST missing required fields is stored incomplete (status_code 201) and emits prospect.created then prospect.incomplete with both URLs null",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-incomplete")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-incomplete", { birthdate: undefined, screening_result: undefined }),
            )
            assert.strictEqual(posted.status_code, 201)
            assert.strictEqual(posted.prospect.status, "incomplete")
            assert.deepInclude(posted.prospect, NO_URLS)
            assert.sameMembers(posted.prospect.missing_fields as Array<string>, [
              "birthdate",
              "screening_result",
            ])

            const messages = yield* awaitEvents(slug, "p-incomplete", 2)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.incomplete"),
            )
            assert.deepStrictEqual(messages[0]!.json, createdBody(slug, "p-incomplete"))
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.incomplete", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-incomplete",
                status: "incomplete",
                ...NO_URLS,
                ...PMS,
                guarantor_coverage: false,
              }),
              "the prospect.ready shape, status incomplete, missing fields not listed",
            )
            const fetched = yield* getProspect(partner, slug, source, "p-incomplete")
            assert.strictEqual(fetched.body.prospect.status, "incomplete")
            assert.deepInclude(fetched.body.prospect, NO_URLS)
          }),
      )

      it.effect(
        "incomplete -> incomplete: a POST that still lacks values upserts the same record and emits nothing; the POST that supplies them moves it to processing and then ready without a second prospect.created",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-complete-later")
            const first = yield* post(
              partner,
              slug,
              completeProspect(source, "p-later", { birthdate: undefined, phone: undefined }),
            )
            assert.strictEqual(first.prospect.status, "incomplete")
            yield* awaitEvents(slug, "p-later", 2)

            const still = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-later",
              phone: "5551234567",
            })
            assert.strictEqual(still.status_code, 200)
            assert.strictEqual(still.prospect.id, first.prospect.id)
            assert.strictEqual(still.prospect.status, "incomplete")
            assert.deepStrictEqual(still.prospect.missing_fields, ["birthdate"])

            const completed = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-later",
              birthdate: "1990-05-15",
            })
            assert.strictEqual(completed.status_code, 200)
            assert.strictEqual(completed.prospect.id, first.prospect.id)
            assert.strictEqual(completed.prospect.status, "processing")
            assert.strictEqual(completed.prospect.phone, "5551234567", "an omitted field keeps its value")

            const ready = yield* awaitProspect(partner, slug, source, "p-later")
            assert.deepInclude(ready, embeddedUrls(slug, source, "p-later"))
            // The ready message follows every earlier message of the prospect, so its arrival shows that the
            // still-incomplete POST emitted nothing.
            const messages = yield* awaitEvents(slug, "p-later", 3)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.incomplete", "prospect.ready"),
            )
            assert.deepStrictEqual(
              messages[2]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${first.prospect.id}`,
                source_prospect_id: "p-later",
                status: "ready",
                ...embeddedUrls(slug, source, "p-later"),
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect(
        "ready -> incomplete: a ready prospect whose required field is cleared with null emits prospect.incomplete with both URLs null",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-lost")
            const first = yield* post(partner, slug, completeProspect(source, "p-lost"))
            yield* awaitProspect(partner, slug, source, "p-lost")
            yield* awaitEvents(slug, "p-lost", 2)

            const cleared = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-lost",
              birthdate: null,
            })
            assert.strictEqual(cleared.status_code, 200)
            assert.strictEqual(cleared.prospect.status, "incomplete")
            assert.deepInclude(cleared.prospect, NO_URLS)
            assert.deepStrictEqual(cleared.prospect.missing_fields, ["birthdate"])

            const messages = yield* awaitEvents(slug, "p-lost", 3)
            assert.deepStrictEqual(
              messages.map((m) => m.subject),
              subjects(slug, "prospect.created", "prospect.ready", "prospect.incomplete"),
            )
            assert.deepStrictEqual(
              messages[2]!.json,
              body("prospect.incomplete", slug, {
                id: `tpp_${first.prospect.id}`,
                source_prospect_id: "p-lost",
                status: "incomplete",
                ...NO_URLS,
                ...PMS,
                guarantor_coverage: false,
              }),
            )
            const fetched = yield* getProspect(partner, slug, source, "p-lost")
            assert.strictEqual(fetched.body.prospect.status, "incomplete")
            assert.deepInclude(fetched.body.prospect, NO_URLS)
          }),
      )

      it.effect(
        "processing -> incomplete: a required field cleared before or after the decision still emits prospect.incomplete once, last",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-race")
            yield* post(partner, slug, completeProspect(source, "p-race"))
            const cleared = yield* post(partner, slug, {
              source,
              source_prospect_id: "p-race",
              email: null,
            })
            assert.strictEqual(cleared.prospect.status, "incomplete")
            const messages = yield* eventually(prospectMessages(slug, "p-race"), (found) =>
              found.some((m) => eventOf(slug, m) === "prospect.incomplete"),
            )
            yield* awaitEvents(slug, "p-race", messages.length)
            const events = messages.map((m) => eventOf(slug, m))
            assert.deepStrictEqual(
              events.filter((e) => e !== "prospect.ready"),
              ["prospect.created", "prospect.incomplete"],
            )
            assert.strictEqual(events.at(-1), "prospect.incomplete")
            assert.isAtMost(events.filter((e) => e === "prospect.ready").length, 1)
            const fetched = yield* getProspect(partner, slug, source, "p-race")
            assert.strictEqual(fetched.body.prospect.status, "incomplete")
            assert.deepInclude(fetched.body.prospect, NO_URLS)
          }),
      )
    })

    it.effect(
      "a POST refused with 422 ('Phone is not valid') creates no record, changes no state and emits nothing",
      () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-refused")
          const refused = yield* postProspect(
            partner,
            slug,
            completeProspect(source, "p-refused", { phone: "+1 555-987-6543" }),
          )
          assert.strictEqual(refused.status, 422)
          assert.include(refused.text, "Phone is not valid")
          assert.strictEqual((yield* getProspect(partner, slug, source, "p-refused")).status, 404)

          const first = yield* post(partner, slug, completeProspect(source, "p-kept"))
          yield* awaitProspect(partner, slug, source, "p-kept")
          const again = yield* postProspect(partner, slug, {
            source,
            source_prospect_id: "p-kept",
            phone: "555987654",
            birthdate: null,
          })
          assert.strictEqual(again.status, 422)
          assert.include(again.text, "Phone is not valid")
          const kept = yield* getProspect(partner, slug, source, "p-kept")
          assert.strictEqual(kept.body.prospect.status, "ready", "the refused POST cleared nothing")
          assert.strictEqual(kept.body.prospect.birthdate, "1990-05-15")
          // A later accepted POST is published after anything the refused one could have emitted.
          yield* post(partner, slug, { source, source_prospect_id: "p-kept", first_name: null })
          const messages = yield* awaitEvents(slug, "p-kept", 3)
          assert.deepStrictEqual(
            messages.map((m) => m.subject),
            subjects(slug, "prospect.created", "prospect.ready", "prospect.incomplete"),
          )
          assert.strictEqual(payloadOf(messages[2]!).id, `tpp_${first.prospect.id}`)
          assert.deepStrictEqual(yield* prospectMessages(slug, "p-refused"), [])
        }),
    )

    it.effect(
      "effective_coverage_amount_cents is the unit's multiplier, else the property's (default 1x), times monthly rent, capped by the owner's max_coverage_amount_cents",
      () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-coverage", {
            owner: { max_coverage_amount_cents: 250_000 },
          })
          const properties = yield* postBatch(partner, slug, "properties", [
            {
              external_system_id: "prop-2x",
              building_name: "Double Tower",
              address: { line_one: "2 Pine St", city: "Springfield", state: "IL", zip: "62704" },
              default_coverage: { type: "multiplier", value: 2 },
            },
          ])
          assert.deepStrictEqual(properties.meta, { created: 1, updated: 0, failed: 0 })
          const units = yield* postBatch(partner, slug, "units", [
            { external_system_id: "unit-inherit", property_external_id: "prop-2x", name: "1A" },
            {
              external_system_id: "unit-1-5x",
              property_external_id: "prop-2x",
              name: "1B",
              default_coverage: { type: "multiplier", value: 1.5 },
            },
          ])
          assert.deepStrictEqual(units.meta, { created: 2, updated: 0, failed: 0 })

          const cases = [
            { id: "c-default", property: "prop-1", unit: "unit-1", rent: 200_000, expected: 200_000 },
            { id: "c-property", property: "prop-2x", unit: "unit-inherit", rent: 100_000, expected: 200_000 },
            { id: "c-unit", property: "prop-2x", unit: "unit-1-5x", rent: 100_000, expected: 150_000 },
            {
              id: "c-cap-property",
              property: "prop-2x",
              unit: "unit-inherit",
              rent: 200_000,
              expected: 250_000,
            },
            { id: "c-cap-unit", property: "prop-2x", unit: "unit-1-5x", rent: 200_000, expected: 250_000 },
          ]
          for (const c of cases) {
            yield* post(
              partner,
              slug,
              completeProspect(source, c.id, {
                pms_property_id: undefined,
                pms_unit_id: undefined,
                property_external_id: c.property,
                unit_external_id: c.unit,
                monthly_rent_cents: c.rent,
                yearly_income: 200_000,
              }),
            )
          }
          for (const c of cases) {
            const ready = yield* awaitProspect(partner, slug, source, c.id)
            assert.strictEqual(ready.effective_coverage_amount_cents, c.expected, c.id)
            assert.deepInclude(ready, embeddedUrls(slug, source, c.id), c.id)
          }
        }),
    )
  })
})

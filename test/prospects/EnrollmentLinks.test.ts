import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { awaitProspect, completeProspect, prospectService } from "../support/Prospects.ts"
import { postBatch } from "../support/Roster.ts"
import {
  setup,
  awaitEvents,
  body,
  PMS,
  link,
  NO_URLS,
  post,
  awaitCreatedThenReady,
} from "../support/ProspectEvents.ts"

const service = prospectService()

describe("prospect enrollment URLs", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    describe("ready without enrollment URLs", () => {
      it.effect(
        "an unresolved property gives ready with both URLs null and 'Property must be present' on GET, never on the webhook",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-noprop")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-noprop", {
                pms_property_id: "pms-prop-unknown",
                pms_unit_id: "pms-unit-unknown",
              }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-noprop")
            assert.strictEqual(ready.status, "ready")
            assert.deepInclude(ready, NO_URLS)
            assert.include(ready.sdi_ineligibility_reasons as Array<string>, "Property must be present")
            assert.include(ready.cd_ineligibility_reasons as Array<string>, "Property must be present")

            const messages = yield* awaitCreatedThenReady(slug, "p-noprop", posted.prospect.id, {
              ...NO_URLS,
              ...PMS,
              pms_property_id: "pms-prop-unknown",
              pms_unit_id: "pms-unit-unknown",
              guarantor_coverage: false,
            })
            for (const message of messages) {
              assert.notInclude(JSON.stringify(message.json), "Property must be present")
              assert.notInclude(JSON.stringify(message.json), "ineligibility")
            }
          }),
      )

      it.effect("an owner not yet active gives ready with null URLs and says why on GET", () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-inactive", { active: false })
          const posted = yield* post(partner, slug, completeProspect(source, "p-inactive"))
          const ready = yield* awaitProspect(partner, slug, source, "p-inactive")
          assert.deepInclude(ready, NO_URLS)
          assert.include(
            ready.sdi_ineligibility_reasons as Array<string>,
            "Property owner is not accepting enrollments yet",
          )
          assert.include(
            ready.cd_ineligibility_reasons as Array<string>,
            "Property owner is not accepting enrollments yet",
          )
          const messages = yield* awaitEvents(slug, "p-inactive", 2)
          assert.deepStrictEqual(
            messages[1]!.json,
            body("prospect.ready", slug, {
              id: `tpp_${posted.prospect.id}`,
              source_prospect_id: "p-inactive",
              status: "ready",
              ...NO_URLS,
              ...PMS,
              guarantor_coverage: false,
            }),
          )
        }),
      )
    })

    describe("enrollment URLs", () => {
      it.effect(
        "are {enrollment_host}/enrollment/embedded/<owner_slug>/<source>/<source_prospect_id>?email=<url_encoded_email>, hosted on /enrollment/expedited/",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-url")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-url", { email: "jane+test@example.com" }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-url")
            const expected = {
              enrollment_url: `https://enroll.test/enrollment/embedded/${slug}/${source}/p-url?email=jane%2Btest%40example.com`,
              hosted_enrollment_url: `https://enroll.test/enrollment/expedited/${slug}/${source}/p-url?email=jane%2Btest%40example.com`,
            }
            assert.deepInclude(ready, expected)
            assert.strictEqual(
              new URL(ready.enrollment_url as string).searchParams.get("email"),
              "jane+test@example.com",
              "the + survives query decoding",
            )
            const messages = yield* awaitEvents(slug, "p-url", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-url",
                status: "ready",
                ...expected,
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect("on a source configured for the expedited flow both URLs use /enrollment/expedited/", () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-expedited", { flow: "expedited" })
          const posted = yield* post(partner, slug, completeProspect(source, "p-exp"))
          const ready = yield* awaitProspect(partner, slug, source, "p-exp")
          const expected = {
            enrollment_url: link("expedited", slug, source, "p-exp"),
            hosted_enrollment_url: link("expedited", slug, source, "p-exp"),
          }
          assert.deepInclude(ready, expected)
          const messages = yield* awaitEvents(slug, "p-exp", 2)
          assert.deepStrictEqual(
            messages[1]!.json,
            body("prospect.ready", slug, {
              id: `tpp_${posted.prospect.id}`,
              source_prospect_id: "p-exp",
              status: "ready",
              ...expected,
              ...PMS,
              guarantor_coverage: false,
            }),
          )
        }),
      )
    })

    it.effect(
      "a building removed from the roster (active false) issues no enrollment URLs to a new prospect",
      () =>
        Effect.gen(function* () {
          const { partner, source, slug } = yield* setup("org-offroster")
          const removed = yield* postBatch(partner, slug, "properties", [
            {
              external_system_id: "prop-1",
              building_name: "Main Tower",
              address: { line_one: "123 Main St", city: "Springfield", state: "IL", zip: "62701" },
              active: false,
            },
          ])
          assert.deepStrictEqual(removed.meta, { created: 0, updated: 1, failed: 0 })
          const posted = yield* post(partner, slug, completeProspect(source, "p-offroster"))
          const ready = yield* awaitProspect(partner, slug, source, "p-offroster")
          assert.deepInclude(ready, NO_URLS)
          assert.isNotEmpty(ready.sdi_ineligibility_reasons as Array<string>)
          const messages = yield* awaitEvents(slug, "p-offroster", 2)
          assert.deepStrictEqual(
            messages[1]!.json,
            body("prospect.ready", slug, {
              id: `tpp_${posted.prospect.id}`,
              source_prospect_id: "p-offroster",
              status: "ready",
              ...NO_URLS,
              ...PMS,
              guarantor_coverage: false,
            }),
          )
        }),
    )
  })
})

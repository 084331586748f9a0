import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { awaitProspect, completeProspect, getProspect, prospectService } from "../support/Prospects.ts"
import { setup, awaitEvents, body, PMS, NO_URLS, embeddedUrls, post } from "../support/ProspectEvents.ts"

const service = prospectService()

describe("prospect renter guarantee fields", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    describe("renter guarantee fields", () => {
      it.effect(
        "guarantor_coverage false (the default) is always present and neither rg field is sent, on GET or on webhooks",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-false", {
              owner: { guarantor_coverage_capable: true },
            })
            const posted = yield* post(partner, slug, completeProspect(source, "p-rg-false"))
            assert.strictEqual(posted.prospect.guarantor_coverage, false)
            assert.notProperty(posted.prospect, "rg_eligibility_status")
            assert.notProperty(posted.prospect, "rg_ineligibility_reasons")
            const ready = yield* awaitProspect(partner, slug, source, "p-rg-false")
            assert.strictEqual(ready.guarantor_coverage, false)
            assert.notProperty(ready, "rg_eligibility_status")
            assert.notProperty(ready, "rg_ineligibility_reasons")
            const messages = yield* awaitEvents(slug, "p-rg-false", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-rg-false",
                status: "ready",
                ...embeddedUrls(slug, source, "p-rg-false"),
                ...PMS,
                guarantor_coverage: false,
              }),
            )
          }),
      )

      it.effect(
        "guarantor_coverage true while pending: rg_ineligibility_reasons is an empty array and rg_eligibility_status is omitted",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-pending", {
              owner: { guarantor_coverage_capable: true },
            })
            const processing = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-pending", { guarantor_coverage: true }),
            )
            assert.strictEqual(processing.prospect.status, "processing")
            assert.strictEqual(processing.prospect.guarantor_coverage, true)
            assert.deepStrictEqual(processing.prospect.rg_ineligibility_reasons, [])
            assert.notProperty(processing.prospect, "rg_eligibility_status")

            const incomplete = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-incomplete", { guarantor_coverage: true, birthdate: undefined }),
            )
            assert.strictEqual(incomplete.prospect.status, "incomplete")
            assert.deepStrictEqual(incomplete.prospect.rg_ineligibility_reasons, [])
            assert.notProperty(incomplete.prospect, "rg_eligibility_status")
            const messages = yield* awaitEvents(slug, "p-rg-incomplete", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.incomplete", slug, {
                id: `tpp_${incomplete.prospect.id}`,
                source_prospect_id: "p-rg-incomplete",
                status: "incomplete",
                ...NO_URLS,
                ...PMS,
                guarantor_coverage: true,
                rg_ineligibility_reasons: [],
              }),
            )
            const fetched = yield* getProspect(partner, slug, source, "p-rg-incomplete")
            assert.deepStrictEqual(fetched.body.prospect.rg_ineligibility_reasons, [])
            assert.notProperty(fetched.body.prospect, "rg_eligibility_status")
          }),
      )

      it.effect(
        "guarantor_coverage true, decided eligible at a property with the renter guarantee enabled: status eligible and no reason",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-eligible", {
              owner: { guarantor_coverage_capable: true },
            })
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-eligible", { guarantor_coverage: true }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-rg-eligible")
            assert.deepInclude(ready, {
              guarantor_coverage: true,
              rg_eligibility_status: "eligible",
              rg_ineligibility_reasons: [],
            })
            const messages = yield* awaitEvents(slug, "p-rg-eligible", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-rg-eligible",
                status: "ready",
                ...embeddedUrls(slug, source, "p-rg-eligible"),
                ...PMS,
                guarantor_coverage: true,
                rg_eligibility_status: "eligible",
                rg_ineligibility_reasons: [],
              }),
            )
          }),
      )

      it.effect(
        "guarantor_coverage true, decided ineligible: status ineligible with its reasons, on GET and on prospect.ready",
        () =>
          Effect.gen(function* () {
            const { partner, source, slug } = yield* setup("org-rg-ineligible")
            const posted = yield* post(
              partner,
              slug,
              completeProspect(source, "p-rg-ineligible", { guarantor_coverage: true }),
            )
            const ready = yield* awaitProspect(partner, slug, source, "p-rg-ineligible")
            assert.deepInclude(ready, {
              guarantor_coverage: true,
              rg_eligibility_status: "ineligible",
              rg_ineligibility_reasons: ["Renter guarantee is not offered at this property"],
              ...embeddedUrls(slug, source, "p-rg-ineligible"),
            })
            const messages = yield* awaitEvents(slug, "p-rg-ineligible", 2)
            assert.deepStrictEqual(
              messages[1]!.json,
              body("prospect.ready", slug, {
                id: `tpp_${posted.prospect.id}`,
                source_prospect_id: "p-rg-ineligible",
                status: "ready",
                ...embeddedUrls(slug, source, "p-rg-ineligible"),
                ...PMS,
                guarantor_coverage: true,
                rg_eligibility_status: "ineligible",
                rg_ineligibility_reasons: ["Renter guarantee is not offered at this property"],
              }),
            )
          }),
      )
    })
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FORBIDDEN, obtainToken, OWNER_NOT_FOUND } from "../support/Auth.ts"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  issueSource,
  postProspect,
  prospectPartner,
  prospectService,
} from "../support/Prospects.ts"
import { createOwnerThroughApi, postBatch, query } from "../support/Roster.ts"
import {
  SOURCE_INVALID,
  PROSPECT_NOT_FOUND,
  nextId,
  setup,
  prospectsOfOwner,
  storedRow,
  assertNothingStored,
  accepted,
  refused,
  assertNamesOnly,
} from "../support/ProspectFields.ts"

const service = prospectService()

describe("prospect sources, owners and scopes", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
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
        const foreign = `fields_foreign_${nextId()}`
        yield* issueSource({ code: foreign, clients: [other.clientId] })
        const unlisted = `fields_unlisted_${nextId()}`
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
            external_org_id: `org-fields-other-${nextId()}`,
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
          const strangersSource = `fields_stranger_${nextId()}`
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

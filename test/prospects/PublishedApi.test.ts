import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  issueSource,
  postProspect,
  prospectPartner,
  prospectService,
  provisionedOwner,
} from "../support/Prospects.ts"
import {
  assertInvalid,
  assertValid,
  compilePublished,
  type Json,
  responseSchema,
} from "../support/PublishedApi.ts"

const validator = (path: string, method: string, status: string) =>
  compilePublished(responseSchema(path, method, status))

const POST = "/partners/{owner_slug}/prospects"
const GET = "/partners/{owner_slug}/prospects/{source}/{source_prospect_id}"

const schemas = {
  post200: validator(POST, "post", "200"),
  post201: validator(POST, "post", "201"),
  post422: validator(POST, "post", "422"),
  get200: validator(GET, "get", "200"),
}

const service = prospectService()

/** A partner with a source of its own and an owner provisioned for it. */
const partnerWithOwner = (code: string, externalOrgId: string) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    yield* issueSource({ code, clients: [partner.clientId] })
    const slug = yield* provisionedOwner(partner, externalOrgId)
    return { partner, slug }
  })

describe("responses validate against the published partner API", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("a created complete prospect matches the POST 201 and 200 schemas", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* partnerWithOwner("pub-created", "org-pub-created")
        const posted = yield* postProspect(partner, slug, completeProspect("pub-created", "p-1"))
        assert.strictEqual(posted.status, 200, posted.text)
        assert.strictEqual(posted.body.status_code, 201)
        assertValid(schemas.post201, posted.body, "POST 201")
        assertValid(schemas.post200, posted.body, "POST 200")
      }),
    )

    it.effect("an update matches the POST 200 schema", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* partnerWithOwner("pub-updated", "org-pub-updated")
        const created = yield* postProspect(partner, slug, completeProspect("pub-updated", "p-1"))
        assert.strictEqual(created.body.status_code, 201, created.text)
        const updated = yield* postProspect(
          partner,
          slug,
          completeProspect("pub-updated", "p-1", { monthly_rent_cents: 210000, citizenship: "non_us" }),
        )
        assert.strictEqual(updated.status, 200, updated.text)
        assert.strictEqual(updated.body.status_code, 200)
        assert.strictEqual(updated.body.prospect.monthly_rent_cents, 210000)
        assertValid(schemas.post200, updated.body, "POST 200 (update)")
      }),
    )

    it.effect("the GET of a ready prospect matches the GET 200 schema", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* partnerWithOwner("pub-ready", "org-pub-ready")
        const posted = yield* postProspect(partner, slug, completeProspect("pub-ready", "p-1"))
        assert.strictEqual(posted.status, 200, posted.text)
        yield* awaitProspect(partner, slug, "pub-ready", "p-1")
        const answer = yield* getProspect(partner, slug, "pub-ready", "p-1")
        assert.strictEqual(answer.status, 200, answer.text)
        assert.strictEqual(answer.body.prospect.status, "ready")
        assertValid(schemas.get200, answer.body, "GET 200")
      }),
    )

    it.effect("an incomplete prospect matches the POST 200 schema, whose fields are nullable", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* partnerWithOwner("pub-incomplete", "org-pub-incomplete")
        const posted = yield* postProspect(partner, slug, {
          source: "pub-incomplete",
          source_prospect_id: "p-1",
          first_name: "Jane",
        })
        assert.strictEqual(posted.status, 200, posted.text)
        assert.strictEqual(posted.body.prospect.status, "incomplete")
        assert.isNull(posted.body.prospect.email)
        assert.isNull(posted.body.prospect.screening_result)
        assertValid(schemas.post200, posted.body, "POST 200 (incomplete)")
      }),
    )

    it.effect("an unknown source's 422 matches the POST 422 schema", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* partnerWithOwner("pub-known", "org-pub-unknown")
        const posted = yield* postProspect(partner, slug, completeProspect("pub-never-issued", "p-1"))
        assert.strictEqual(posted.status, 422, posted.text)
        assertValid(schemas.post422, posted.body, "POST 422")
      }),
    )

    it.effect("validation can fail: mutated bodies are refused, nullable only where published", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* partnerWithOwner("pub-sanity", "org-pub-sanity")
        const posted = yield* postProspect(partner, slug, completeProspect("pub-sanity", "p-1"))
        assert.strictEqual(posted.status, 200, posted.text)
        const body = posted.body
        const withProspect = (changes: Json) => ({ ...body, prospect: { ...body.prospect, ...changes } })
        assertValid(schemas.post201, body, "the unchanged body")

        const idAsString = withProspect({ id: String(body.prospect.id) })
        for (const [name, validate] of Object.entries(schemas)) {
          if (name !== "post422") assertInvalid(validate, idAsString, `${name} with id as a string`)
        }
        assertInvalid(schemas.post200, { status_code: body.status_code }, "a body without prospect")
        assertInvalid(schemas.post200, withProspect({ status: "pending" }), "an unpublished status")
        assertInvalid(
          schemas.post200,
          withProspect({ screening_result: "maybe" }),
          "an unpublished enum value",
        )

        // The 200 schema is nullable where the 201 and GET schemas are not; first_name is nullable in none.
        const nullEmail = withProspect({ email: null, screening_result: null })
        assertValid(schemas.post200, nullEmail, "POST 200 with null email and screening_result")
        assertInvalid(schemas.post201, nullEmail, "POST 201 with null email")
        assertInvalid(schemas.get200, nullEmail, "GET 200 with null email")
        assertInvalid(schemas.post200, withProspect({ first_name: null }), "POST 200 with null first_name")

        const unknownSource = { status_code: 422, error: "Prospect invalid.", prospect: {} }
        assertInvalid(schemas.post422, unknownSource, "a 422 without prospect.source")
      }),
    )
  })
})

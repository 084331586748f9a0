import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { Ajv, type ValidateFunction } from "ajv"
import addFormats from "ajv-formats"
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

/**
 * The API as published to partners (OpenAPI 3.0): a byte-for-byte copy of the shared contract's file, kept in
 * the repo so the test runs from any checkout (CI's clean clone has no `../shared`).
 */
const SPEC_PATH = fileURLToPath(new URL("../fixtures/published-partner-api.openapi.json", import.meta.url))

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * An OpenAPI 3.0 schema as JSON Schema: `{type: T, nullable: true}` becomes `type: [T, "null"]` (an `enum` takes
 * `null` too); `nullable` without a `type` constrains nothing, so it is dropped. Only schema positions are
 * walked, so a property that happened to be named `nullable` would stay a property.
 */
const fromOpenApi30 = (node: unknown): unknown => {
  if (!isObject(node)) return node
  const { nullable, ...rest } = node
  const out: Json = { ...rest }
  if (isObject(rest.properties)) {
    out.properties = Object.fromEntries(
      Object.entries(rest.properties).map(([name, schema]) => [name, fromOpenApi30(schema)]),
    )
  }
  for (const key of ["items", "additionalProperties", "not"] as const) {
    if (isObject(rest[key])) out[key] = fromOpenApi30(rest[key])
  }
  for (const key of ["allOf", "anyOf", "oneOf"] as const) {
    if (Array.isArray(rest[key])) out[key] = (rest[key] as Array<unknown>).map(fromOpenApi30)
  }
  if (nullable === true && typeof rest.type === "string") {
    out.type = [rest.type, "null"]
    if (Array.isArray(rest.enum) && !rest.enum.includes(null)) out.enum = [...rest.enum, null]
  }
  return out
}

const spec = JSON.parse(readFileSync(SPEC_PATH, "utf8")) as Json

/** The JSON body schema of one documented response, as published. */
const responseSchema = (path: string, method: string, status: string) => {
  const operation = ((spec.paths as Json)[path] as Json | undefined)?.[method] as Json | undefined
  const response = (operation?.responses as Json | undefined)?.[status] as Json | undefined
  const schema = ((response?.content as Json | undefined)?.["application/json"] as Json | undefined)?.schema
  if (!isObject(schema)) throw new Error(`the published API has no ${status} body for ${method} ${path}`)
  return schema
}

// Not strict: the published schemas carry `example` and other keywords JSON Schema does not know.
const ajv = new Ajv({ strict: false, allErrors: true })
addFormats.default(ajv)
// OpenAPI's `format: float` on a `number` says nothing a JSON number does not already satisfy.
ajv.addFormat("float", { type: "number", validate: (value: number) => Number.isFinite(value) })

const validator = (path: string, method: string, status: string) =>
  ajv.compile(fromOpenApi30(responseSchema(path, method, status)) as Json)

const POST = "/partners/{owner_slug}/prospects"
const GET = "/partners/{owner_slug}/prospects/{source}/{source_prospect_id}"

const schemas = {
  post200: validator(POST, "post", "200"),
  post201: validator(POST, "post", "201"),
  post422: validator(POST, "post", "422"),
  get200: validator(GET, "get", "200"),
}

/** Asserts `body` satisfies the published schema, naming every violation otherwise. */
const assertValid = (validate: ValidateFunction, body: unknown, what: string) => {
  const valid = validate(body)
  assert.isTrue(
    valid,
    `${what}: ${ajv.errorsText(validate.errors, { separator: "\n" })}\n${JSON.stringify(body)}`,
  )
}

const assertInvalid = (validate: ValidateFunction, body: unknown, what: string) =>
  assert.isFalse(validate(body), `${what} should not validate`)

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

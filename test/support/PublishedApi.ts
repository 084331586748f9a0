import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert } from "@effect/vitest"
import { Ajv, type ValidateFunction } from "ajv"
import addFormats from "ajv-formats"

/**
 * The API as published to partners (OpenAPI 3.0): a byte-for-byte copy of the shared contract's file, kept in
 * the repo so the tests run from any checkout (CI's clean clone has no `../shared`).
 */
const SPEC_PATH = fileURLToPath(new URL("../fixtures/published-partner-api.openapi.json", import.meta.url))

export type Json = Record<string, unknown>

export const isObject = (value: unknown): value is Json =>
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

export const publishedSpec = JSON.parse(readFileSync(SPEC_PATH, "utf8")) as Json

/** The JSON body schema of one documented response, as published (a copy: callers may adjust it). */
export const responseSchema = (path: string, method: string, status: string) => {
  const operation = ((publishedSpec.paths as Json)[path] as Json | undefined)?.[method] as Json | undefined
  const response = (operation?.responses as Json | undefined)?.[status] as Json | undefined
  const schema = ((response?.content as Json | undefined)?.["application/json"] as Json | undefined)?.schema
  if (!isObject(schema)) throw new Error(`the published API has no ${status} body for ${method} ${path}`)
  return structuredClone(schema)
}

// Not strict: the published schemas carry `example` and other keywords JSON Schema does not know.
const ajv = new Ajv({ strict: false, allErrors: true })
addFormats.default(ajv)
// OpenAPI's `format: float` on a `number` says nothing a JSON number does not already satisfy.
ajv.addFormat("float", { type: "number", validate: (value: number) => Number.isFinite(value) })

/** A validator of a published (OpenAPI 3.0) schema. */
export const compilePublished = (schema: Json): ValidateFunction => ajv.compile(fromOpenApi30(schema) as Json)

export const assertValid = (validate: ValidateFunction, body: unknown, what: string) =>
  assert.isTrue(
    validate(body),
    `${what}: ${ajv.errorsText(validate.errors, { separator: "\n" })}\n${JSON.stringify(body)}`,
  )

export const assertInvalid = (validate: ValidateFunction, body: unknown, what: string) =>
  assert.isFalse(validate(body), `${what} should not validate`)

import { Validator } from "@seriousme/openapi-schema-validator"
import { Effect } from "effect"

/** Validates against the OpenAPI 3.1 schema and checks every `$ref`; fails with the validator's errors. */
export const validateOpenApi = (document: unknown) =>
  Effect.promise(async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(document) as Record<string, unknown>)
    return { valid: result.valid, version: validator.version, errors: JSON.stringify(result.errors ?? []) }
  })

type Json = Record<string, unknown>

/** The node a local `$ref` points to (or the node itself when it is no reference). */
export const resolveRef = (document: unknown, node: unknown): Json => {
  const ref = (node as { $ref?: unknown }).$ref
  if (typeof ref !== "string") return node as Json
  if (!ref.startsWith("#/")) throw new Error(`not a local reference: ${ref}`)
  const target = ref
    .slice(2)
    .split("/")
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .reduce<unknown>((at, part) => (at as Json | undefined)?.[part], document)
  if (target === undefined) throw new Error(`unresolved reference: ${ref}`)
  return resolveRef(document, target)
}

/** Walks `path` from `node`, following references on the way. */
export const at = (document: unknown, node: unknown, ...path: ReadonlyArray<string>): Json =>
  path.reduce<Json>(
    (current, key) => {
      const next = resolveRef(document, current)[key]
      if (next === undefined) throw new Error(`no ${key} in ${JSON.stringify(current).slice(0, 200)}`)
      return resolveRef(document, next)
    },
    resolveRef(document, node),
  )

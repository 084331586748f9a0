import { Schema } from "effect"

/** A JSON object (not null, not an array): what a request body's envelope must be. */
export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `text` parsed as JSON, or the text itself when it is not JSON (a stored payload shown as it was sent). */
export const jsonOrText = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** Field-level errors as the contract writes them: `{ "address.zip": ["is not a valid ZIP code"] }`. */
export type FieldErrors = Record<string, Array<string>>

/** Schema messages in the contract's voice: what a partner reads in `errors`. */
const sentence = (message: string) => {
  if (message === "Missing key") return "is required"
  if (message.startsWith("Unexpected key")) return "is not a known field"
  const expected = /^Expected (.+)$/.exec(message)?.[1]
  if (expected === undefined) return message
  return `must be ${expected
    .replace(/\{ readonly [^}]*\}/g, "an object of the documented shape")
    .replace(/\bstring\b/g, "a string")
    .replace(/\bnumber\b/g, "a number")
    .replace(/\bboolean\b/g, "true or false")
    .replace(/\bnull\b/g, "null")
    .replace(/ \| undefined$/, "")
    .replaceAll(" | ", " or ")}`
}

/**
 * Decodes `input` with `schema`, collecting every failing field (not only the first) keyed by its path, so a
 * batch item can report them all at once.
 */
export const decodeFields = <S extends Schema.ConstraintDecoder<unknown>>(schema: S) => {
  const standard = Schema.toStandardSchemaV1(schema)
  return (input: unknown): { readonly value: S["Type"] } | { readonly errors: FieldErrors } => {
    const result = standard["~standard"].validate(input)
    if (result instanceof Promise) throw new Error("decodeFields needs a synchronous schema")
    if (!result.issues) return { value: result.value as S["Type"] }
    const errors: FieldErrors = {}
    for (const issue of result.issues) {
      const field =
        (issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".") || "base"
      ;(errors[field] ??= []).push(sentence(issue.message))
    }
    return { errors }
  }
}

/** One message per field, as the published error bodies carry them: a field's messages joined with "; ". */
export const joinedMessages = (errors: FieldErrors): Record<string, string> =>
  Object.fromEntries(Object.entries(errors).map(([field, messages]) => [field, messages.join("; ")]))

import { assert, describe, it } from "@effect/vitest"
import { Cause, Exit, Schema } from "effect"
import { FIELD_LIMITS, limitedText, textProblem } from "../../backend/contract/FieldLimits.ts"

const accepts = (schema: Schema.Codec<string, string>, text: string) =>
  Exit.isSuccess(Schema.decodeUnknownExit(schema)(text))

/** The message a field's schema refuses `text` with, or undefined when it accepts it. */
const refusal = (schema: Schema.Codec<string, string>, text: string) => {
  const exit = Schema.decodeUnknownExit(schema)(text)
  return Exit.isFailure(exit) ? (Cause.squash(exit.cause) as Error).message : undefined
}

describe("a contract text field", () => {
  it("has a problem only when longer than its field's limit, counted in characters, or holding a control", () => {
    assert.isUndefined(textProblem("zip", "1234567890"))
    assert.strictEqual(textProblem("zip", "12345678901"), "is too long (maximum is 10 characters)")
    assert.strictEqual(textProblem("source", "s".repeat(41)), "is too long (maximum is 40 characters)")
    assert.isUndefined(textProblem("source", "😀".repeat(40)))
    assert.strictEqual(textProblem("source", "😀".repeat(41)), "is too long (maximum is 40 characters)")
    assert.strictEqual(textProblem("city", "Spring\nfield"), "must not contain control characters")
    // Too long is told first, when both.
    assert.strictEqual(textProblem("zip", "1234\n567890"), "is too long (maximum is 10 characters)")
  })

  it("refuses every C0 control, DEL and every C1 control, and nothing next to them", () => {
    for (const code of [0x00, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f, 0x80, 0x85, 0x9f]) {
      const text = `ab${String.fromCharCode(code)}`
      assert.strictEqual(textProblem("city", text), "must not contain control characters", code.toString(16))
    }
    for (const text of [" ", "~", "\u00a0", "é", "😀", ""])
      assert.isUndefined(textProblem("city", text), text)
  })

  it("decodes up to its field's limit, refusing longer, control characters and blank unless allowed", () => {
    const email = limitedText("email")
    assert.isTrue(accepts(email, "a".repeat(FIELD_LIMITS.email)))
    assert.isFalse(accepts(email, "a".repeat(FIELD_LIMITS.email + 1)))
    assert.isFalse(accepts(email, "a\u0000b"))
    assert.isFalse(accepts(email, ""))
    assert.isFalse(accepts(limitedText("line_two", {}), ""))
    const lineTwo = limitedText("line_two", { blankAllowed: true })
    assert.isTrue(accepts(lineTwo, ""))
    assert.isFalse(accepts(lineTwo, "x".repeat(256)))
  })

  it("tells each refusal in its own words, and counts characters as the length check does", () => {
    const source = limitedText("source")
    assert.strictEqual(refusal(source, ""), "can't be blank")
    assert.strictEqual(refusal(source, "s".repeat(41)), "is too long (maximum is 40 characters)")
    assert.strictEqual(refusal(source, "s\u007fs"), "must not contain control characters")
    assert.isUndefined(refusal(source, "😀".repeat(40)))
    assert.strictEqual(refusal(source, "😀".repeat(41)), "is too long (maximum is 40 characters)")
    const zip = limitedText("zip", { blankAllowed: true })
    assert.isUndefined(refusal(zip, ""))
    assert.strictEqual(refusal(zip, "12345678901"), "is too long (maximum is 10 characters)")
    assert.strictEqual(refusal(zip, "1\u009f"), "must not contain control characters")
  })

  it("documents its limit, the controls it refuses and, unless blank is allowed, a minimum length", () => {
    const pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
    assert.deepStrictEqual(Schema.toJsonSchemaDocument(limitedText("email")).schema, {
      type: "string",
      minLength: 1,
      maxLength: FIELD_LIMITS.email,
      pattern,
    })
    assert.deepStrictEqual(Schema.toJsonSchemaDocument(limitedText("zip", { blankAllowed: true })).schema, {
      type: "string",
      maxLength: FIELD_LIMITS.zip,
      pattern,
    })
  })

  it("decodes an identifier to its NFC form and refuses one with a zero-width or bidirectional control character", () => {
    const id = limitedText("external_system_id")
    assert.strictEqual(Schema.decodeUnknownSync(id)("cafe\u0301-1"), "caf\u00e9-1")
    const invisible = "must not contain zero-width or bidirectional control characters"
    for (const code of [
      0x200b, 0x200d, 0x200e, 0x200f, 0x202a, 0x202e, 0x2060, 0x2066, 0x2069, 0xfeff, 0x061c,
    ]) {
      const text = `p${String.fromCharCode(code)}1`
      assert.strictEqual(refusal(id, text), invisible, code.toString(16))
      assert.strictEqual(textProblem("source_prospect_id", text), invisible, code.toString(16))
    }
    // Only identifiers: a name may hold a joiner (emoji sequences, Indic scripts).
    assert.isUndefined(textProblem("first_name", "a\u200db"))
    assert.deepStrictEqual(Schema.toJsonSchemaDocument(id).schema, {
      type: "string",
      minLength: 1,
      maxLength: FIELD_LIMITS.external_system_id,
      pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",
    })
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import { FIELD_LIMITS, limitedText, textProblem } from "../../backend/contract/FieldLimits.ts"

const accepts = (schema: Schema.Codec<string, string>, text: string) =>
  Exit.isSuccess(Schema.decodeUnknownExit(schema)(text))

describe("a contract text field", () => {
  it("has a problem only when longer than its field's limit, counted in characters, or holding a control", () => {
    assert.isUndefined(textProblem("zip", "1234567890"))
    assert.strictEqual(textProblem("zip", "12345678901"), "is too long (maximum is 10 characters)")
    assert.strictEqual(textProblem("source", "s".repeat(41)), "is too long (maximum is 40 characters)")
    assert.isUndefined(textProblem("source", "😀".repeat(40)))
    assert.strictEqual(textProblem("city", "Spring\nfield"), "must not contain control characters")
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
})

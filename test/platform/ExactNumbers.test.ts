import { assert, describe, it } from "@effect/vitest"
import { parseExactJson } from "../../backend/platform/Http.ts"

describe("JSON read with exact numbers", () => {
  it("keeps a number a double would change as the text sent", () => {
    assert.deepStrictEqual(
      parseExactJson(
        "[9007199254740993, -9007199254740993, 123456789012345678901234567890, 1.0000000000000001, 1e400, 1e-400]",
      ),
      [
        "9007199254740993",
        "-9007199254740993",
        "123456789012345678901234567890",
        "1.0000000000000001",
        "1e400",
        "1e-400",
      ],
    )
  })

  it("keeps every number a double holds as a number, however it is spelled", () => {
    assert.deepStrictEqual(
      parseExactJson(
        '{"a": 9007199254740992, "b": 1e3, "c": 12.50, "d": 0.1, "e": -0, "f": 1e21, "g": 2.5E-7}',
      ),
      { a: 9007199254740992, b: 1000, c: 12.5, d: 0.1, e: -0, f: 1e21, g: 2.5e-7 },
    )
  })

  it("keeps a long number exact whether or not the rest of the text needs the reviver", () => {
    assert.deepStrictEqual(parseExactJson('{"id": 1.000000000000001, "n": 12}'), {
      id: 1.000000000000001,
      n: 12,
    })
    assert.deepStrictEqual(parseExactJson('{"id": 9007199254740993}'), { id: "9007199254740993" })
    assert.deepStrictEqual(parseExactJson('{"id": 1E+400}'), { id: "1E+400" })
  })
})

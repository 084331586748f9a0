import { assert, describe, it } from "@effect/vitest"
import { isCalendarDate, isDay, isStorable, readInstant } from "../../backend/platform/Dates.ts"

describe("dates the database can store", () => {
  it("takes instants from the first millisecond of year 0001 to the last of 9999, in UTC", () => {
    assert.isTrue(isStorable(new Date("0001-01-01T00:00:00Z")))
    assert.isTrue(isStorable(new Date("9999-12-31T23:59:59.999Z")))
    assert.isFalse(isStorable(new Date("0000-12-31T23:59:59.999Z")))
    assert.isFalse(isStorable(new Date("0001-01-01T00:00:00+00:01")))
    assert.isFalse(isStorable(new Date("9999-12-31T23:59:59-00:01")))
    assert.isFalse(isStorable(new Date(8.64e15)))
    assert.isFalse(isStorable(new Date(Number.NaN)))
  })

  it("takes days that exist, and only from 0001-01-01 to 9999-12-31 as calendar dates", () => {
    for (const day of ["0001-01-01", "0099-06-15", "2028-02-29", "9999-12-31"])
      assert.isTrue(isCalendarDate(day), day)
    for (const day of [
      "0000-01-01",
      "2026-02-29",
      "2026-02-30",
      "2026-13-01",
      "2026-1-01",
      "+10000-01-01",
      "",
    ])
      assert.isFalse(isCalendarDate(day), day)
    assert.isTrue(isDay("0000-01-01"))
    assert.isFalse(isDay("0000-02-30"))
  })

  it("reads a timestamp to the instant it names, with its offset applied", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["2026-02-28T23:59:59Z", "2026-02-28T23:59:59.000Z"],
      ["2028-02-29T12:00:00+05:30", "2028-02-29T06:30:00.000Z"],
      ["2026-03-01T00:00-0700", "2026-03-01T07:00:00.000Z"],
      ["2026-03-01t10:15:30.123456789z", "2026-03-01T10:15:30.123Z"],
      ["0099-06-15T00:00:00Z", "0099-06-15T00:00:00.000Z"],
    ]
    for (const [text, instant] of cases) {
      const read = readInstant(text)
      assert.strictEqual("at" in read ? read.at.toISOString() : read.problem, instant, text)
    }
  })

  it("refuses a date or time that does not exist, instead of rolling it over", () => {
    for (const text of [
      "2026-02-30T00:00:00Z",
      "2026-02-29T00:00:00Z",
      "2026-04-31T12:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-10T00:00:00Z",
      "2026-03-00T00:00:00Z",
      "2026-03-01T24:00:00Z",
      "2026-03-01T24:61:00Z",
      "2026-03-01T12:60:00Z",
      "2026-12-31T23:59:60Z",
      "2026-03-01T12:00:00+24:00",
      "2026-03-01T12:00:00+05:60",
    ])
      assert.deepStrictEqual(readInstant(text), { problem: "nonexistent" }, text)
  })

  it("tells a text that is no timestamp from one outside the years 0001 to 9999", () => {
    for (const text of [
      "",
      "2026-03-01",
      "2026-03-01 12:00:00Z",
      "2026-03-01T12:00:00",
      "1772409600",
      "+010000-01-01T00:00:00Z",
    ])
      assert.deepStrictEqual(readInstant(text), { problem: "form" }, text)
    for (const text of ["0000-06-01T00:00:00Z", "0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"])
      assert.deepStrictEqual(readInstant(text), { problem: "range" }, text)
  })
})

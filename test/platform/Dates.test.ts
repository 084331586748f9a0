import { assert, describe, it } from "@effect/vitest"
import { isCalendarDate, isDay, isStorable } from "../../backend/platform/Dates.ts"

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
})

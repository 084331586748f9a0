/**
 * The instants and calendar dates the service takes. JavaScript reads years 0000 and past 9999 (an offset can carry
 * a valid-looking time into either), but Postgres has no year 0, and a year past 9999 is written `+010000-…`, which
 * it cannot read: such a value would fail in the database rather than be refused as input.
 */
const EARLIEST = Date.parse("0001-01-01T00:00:00.000Z")
const LATEST = Date.parse("9999-12-31T23:59:59.999Z")

/** What a value out of that range is told. */
export const OUT_OF_RANGE = "must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"

/** A real instant within the years 0001 to 9999 (UTC). */
export const isStorable = (date: Date) => {
  const at = date.getTime()
  return at >= EARLIEST && at <= LATEST
}

/** `YYYY-MM-DD` naming a day that exists in any year from 0000 to 9999. */
export const isDay = (value: string) => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false
  const date = new Date(`${value}T00:00:00Z`)
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value
}

/** `YYYY-MM-DD` naming a day that exists, from 0001-01-01 to 9999-12-31. */
export const isCalendarDate = (value: string) => isDay(value) && isStorable(new Date(`${value}T00:00:00Z`))

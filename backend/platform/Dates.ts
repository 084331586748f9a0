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

/**
 * RFC 3339's date-time, as loosely as any input takes it (seconds optional, up to nine fractional digits, `T`/`t`,
 * `Z`/`z` or an offset with or without its colon); each input may ask for a narrower form before reading.
 */
const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/

/** What an impossible date or time is told. */
export const NONEXISTENT =
  "names a date or time that does not exist (months run 01-12, days to the month's last, hours 00-23, minutes and seconds 00-59)"

/** Why a text is not an instant: not of the form, a date or time that does not exist, or outside `isStorable`. */
export type InstantProblem = "form" | "nonexistent" | "range"

/**
 * The instant a timestamp names, read strictly: `new Date` rolls 2026-02-30 over to 2026-03-02 and 24:00 to the
 * next day, so each part is checked against the calendar and the clock first. A leap second (`:60`) is refused:
 * a JavaScript instant cannot hold one, and rolling it over would name a second the sender did not mean.
 */
export const readInstant = (text: string): { readonly at: Date } | { readonly problem: InstantProblem } => {
  const parts = INSTANT.exec(text)
  if (parts === null) return { problem: "form" }
  const [, year, month, day, hour, minute, second = "00", fraction = "", sign, offsetHour, offsetMinute] =
    parts
  if (
    !isDay(`${year}-${month}-${day}`) ||
    Number(hour) > 23 ||
    Number(minute) > 59 ||
    Number(second) > 59 ||
    Number(offsetHour ?? 0) > 23 ||
    Number(offsetMinute ?? 0) > 59
  )
    return { problem: "nonexistent" }
  const millis = fraction.padEnd(3, "0").slice(0, 3)
  const zone = sign === undefined ? "Z" : `${sign}${offsetHour}:${offsetMinute}`
  const at = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${zone}`)
  return isStorable(at) ? { at } : { problem: "range" }
}

/** The sentence for an instant's problem, with the input's own wording for a text of the wrong form. */
export const instantProblemMessage = (problem: InstantProblem, formMessage: string) =>
  problem === "form" ? formMessage : problem === "nonexistent" ? NONEXISTENT : OUT_OF_RANGE

/** An instant as the API writes it: ISO 8601 in UTC with milliseconds. */
export const iso = (date: Date) => date.toISOString()

/** `iso`, keeping an absent instant `null`. */
export const isoOrNull = (date: Date | null) => (date === null ? null : date.toISOString())

import type { TimeZoneChoice } from "../composables/timeZone"

/** The Intl time zone of a choice: the browser's own, or UTC. */
const intlZone = (zone: TimeZoneChoice) => (zone === "utc" ? "UTC" : undefined)

const dateTimes = {
  local: new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long" }),
  utc: new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long", timeZone: "UTC" }),
}

const shortTimes = {
  local: new Intl.DateTimeFormat(undefined, {
    month: "short",
    day: "numeric",
    hour: "numeric",
    minute: "2-digit",
    second: "2-digit",
  }),
  utc: new Intl.DateTimeFormat(undefined, {
    month: "short",
    day: "numeric",
    hour: "numeric",
    minute: "2-digit",
    second: "2-digit",
    timeZone: "UTC",
  }),
}

/** A time in a list's column: no year and no zone ("Nov 26, 6:28:59 AM"); the zone is the console's choice. */
export const formatShortTime = (iso: string, zone: TimeZoneChoice) => shortTimes[zone].format(new Date(iso))

/** A time with its zone's abbreviation ("Nov 26, 2026, 6:28:59 AM PST", or "... 2:28:59 PM UTC"). */
export const formatTime = (iso: string, zone: TimeZoneChoice) => dateTimes[zone].format(new Date(iso))

/** Hours and minutes only (a chart's axis), in the chosen zone. */
export const formatClock = (iso: string, zone: TimeZoneChoice) =>
  new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", timeZone: intlZone(zone) }).format(
    new Date(iso),
  )

/** The zone's abbreviation at `at` (PST or PDT, UTC), for labels. */
export const zoneName = (zone: TimeZoneChoice, at: Date = new Date()) =>
  new Intl.DateTimeFormat(undefined, { timeZoneName: "short", timeZone: intlZone(zone) })
    .formatToParts(at)
    .find((part) => part.type === "timeZoneName")?.value ?? (zone === "utc" ? "UTC" : "local time")

/** The full ISO time, shown on hover. */
export const isoTime = (iso: string) => new Date(iso).toISOString()

const pad = (n: number) => String(n).padStart(2, "0")

/** An ISO time as an `<input type="datetime-local">` value in the chosen zone, and back. */
export const toZoneInput = (iso: string, zone: TimeZoneChoice) => {
  if (!iso) return ""
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return ""
  if (zone === "utc") return date.toISOString().slice(0, 16)
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`
}
export const fromZoneInput = (value: string, zone: TimeZoneChoice) => {
  if (!value) return ""
  const date = new Date(zone === "utc" ? `${value}Z` : value)
  return Number.isNaN(date.getTime()) ? "" : date.toISOString()
}

export const percent = (rate: number | null) => (rate === null ? "—" : `${(rate * 100).toFixed(1)} %`)
export const millis = (ms: number | null) => (ms === null ? "—" : `${Math.round(ms)} ms`)

/**
 * Where a latency quantile lies, as the health histogram knows it: its slot's bounds ("3,000–5,000 ms", "≥ 10,000
 * ms" for the open slot past the last bound).
 */
export const latencyRange = (bounds: { low_ms: number; high_ms: number | null } | null) =>
  bounds === null
    ? "—"
    : bounds.high_ms === null
      ? `≥ ${bounds.low_ms.toLocaleString("en")} ms`
      : `${bounds.low_ms.toLocaleString("en")}–${bounds.high_ms.toLocaleString("en")} ms`

export const subscriberName = (s: {
  owner: { slug: string; name: string } | null
  provider: { name: string } | null
}) => (s.owner ? `${s.owner.name} (${s.owner.slug})` : s.provider ? `Provider ${s.provider.name}` : "—")

const dollars = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD" })

/** An amount in cents as dollars. */
export const money = (cents: number | null | undefined) =>
  cents === null || cents === undefined ? "—" : dollars.format(cents / 100)

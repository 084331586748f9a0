const local = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" })

/** A time in the operator's own time zone. */
export const localTime = (iso: string) => local.format(new Date(iso))

/** The same time in UTC, shown on hover. */
export const utcTime = (iso: string) =>
  `${new Date(iso)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "")} UTC`

/** An ISO time for an `<input type="datetime-local">` value (local time), and back. */
export const toLocalInput = (iso: string) => {
  if (!iso) return ""
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return ""
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`
}
export const fromLocalInput = (value: string) => (value ? new Date(value).toISOString() : "")

export const percent = (rate: number | null) => (rate === null ? "—" : `${(rate * 100).toFixed(1)} %`)
export const millis = (ms: number | null) => (ms === null ? "—" : `${Math.round(ms)} ms`)

export const subscriberName = (s: {
  owner: { slug: string; name: string } | null
  provider: { name: string } | null
}) => (s.owner ? `${s.owner.name} (${s.owner.slug})` : s.provider ? `Provider ${s.provider.name}` : "—")

const dollars = new Intl.NumberFormat(undefined, { style: "currency", currency: "USD" })

/** An amount in cents as dollars. */
export const money = (cents: number | null | undefined) =>
  cents === null || cents === undefined ? "—" : dollars.format(cents / 100)

/** A byte count in the unit that keeps it short. */
export const bytes = (n: number) => {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"]
  let value = n
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`
}

/** A duration in seconds, in its largest whole unit past a minute. */
export const seconds = (s: number) =>
  s < 120
    ? `${s} s`
    : s < 7200
      ? `${Math.round(s / 60)} min`
      : s < 172_800
        ? `${Math.round(s / 3600)} h`
        : `${Math.round(s / 86_400)} days`

/** A figure's JetStream limit, after the figure (-1 is none). */
export const limit = (n: number, show: (n: number) => string = (v) => v.toLocaleString("en")) =>
  n < 0 ? "(no limit)" : `of ${show(n)}`

/** A consumer with work in hand: messages pending or not yet acknowledged, or flagged. */
export const isBusy = (c: { pending: number; ack_pending: number; flag: string | null }) =>
  c.pending > 0 || c.ack_pending > 0 || c.flag !== null

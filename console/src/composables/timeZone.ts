import { computed, ref } from "vue"

/** How the console shows times: in the browser's own zone, or in UTC (as the API and the URLs have them). */
export type TimeZoneChoice = "local" | "utc"

const STORAGE_KEY = "console.time-zone"

const stored = (): TimeZoneChoice => {
  try {
    return localStorage.getItem(STORAGE_KEY) === "utc" ? "utc" : "local"
  } catch {
    return "local"
  }
}

/** One choice for the whole console, remembered across visits in this browser. */
const choice = ref<TimeZoneChoice>(stored())

export function useTimeZone() {
  const set = (next: TimeZoneChoice) => {
    choice.value = next
    try {
      localStorage.setItem(STORAGE_KEY, next)
    } catch {
      // Storage refused (a private window's quota): the choice holds for this visit.
    }
  }
  return { zone: computed(() => choice.value), set }
}

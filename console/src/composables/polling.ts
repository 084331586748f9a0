import { onBeforeUnmount } from "vue"

/**
 * Runs `tick` every `ms` while `active()` says so, one at a time (a slow answer is never overtaken), and stops
 * when the component goes away.
 */
export function usePolling(tick: () => Promise<unknown>, active: () => boolean, ms = 1000) {
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const schedule = () => {
    if (stopped || timer !== undefined) return
    timer = setTimeout(async () => {
      timer = undefined
      if (stopped || !active()) return
      try {
        await tick()
      } finally {
        if (active()) schedule()
      }
    }, ms)
  }
  onBeforeUnmount(() => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
  })
  return { start: schedule }
}

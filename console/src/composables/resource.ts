import { ref, shallowRef, watch, type WatchSource } from "vue"
import { ApiError } from "./api"

/**
 * One loadable thing (a page's data): loading, its value, or the error to show. A newer load wins over a slower
 * older one, so a quick change of filters never shows stale rows.
 */
export function useResource<T>(load: () => Promise<T>, source?: WatchSource) {
  const data = shallowRef<T | undefined>(undefined)
  const error = ref<ApiError | undefined>(undefined)
  const loading = ref(false)
  let generation = 0
  /** A refresh asked for while a load was under way: run once that load has answered. */
  let refreshAfterLoad = false
  const reload = async () => {
    const mine = ++generation
    loading.value = true
    error.value = undefined
    try {
      const value = await load()
      if (mine === generation) data.value = value
    } catch (cause) {
      if (mine === generation)
        error.value = cause instanceof ApiError ? cause : new ApiError(0, String(cause))
    } finally {
      if (mine === generation) {
        loading.value = false
        if (refreshAfterLoad) {
          refreshAfterLoad = false
          void refresh()
        }
      }
    }
  }
  /**
   * Loads again without showing it (a live update, a catch-up): what is shown stays until the answer replaces it,
   * and a failure leaves it as it was, for the next update or reconnection to try again. Asked for while a load is
   * under way, it waits for that load's answer rather than replace it: a live connection opening as the page
   * loads would otherwise drop the load's answer, its error included, and show nothing.
   */
  const refresh = async () => {
    if (loading.value) {
      refreshAfterLoad = true
      return
    }
    const mine = ++generation
    try {
      const value = await load()
      if (mine === generation) {
        data.value = value
        error.value = undefined
      }
    } catch {
      // Kept as it was: see above.
    } finally {
      if (mine === generation) loading.value = false
    }
  }
  // An empty source (a route parameter while the router leaves the page) loads nothing.
  if (source)
    watch(source, (value) => value !== undefined && value !== "" && void reload(), { immediate: true })
  else void reload()
  return { data, error, loading, reload, refresh }
}

/** A button's action: its pending state and the error it ended with, shown beside it. */
export function useAction<A extends unknown[], T>(run: (...args: A) => Promise<T>) {
  const pending = ref(false)
  const error = ref<ApiError | undefined>(undefined)
  const perform = async (...args: A): Promise<T | undefined> => {
    pending.value = true
    error.value = undefined
    try {
      return await run(...args)
    } catch (cause) {
      error.value = cause instanceof ApiError ? cause : new ApiError(0, String(cause))
      return undefined
    } finally {
      pending.value = false
    }
  }
  return { pending, error, perform }
}

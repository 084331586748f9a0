import { computed, type ComputedRef, ref, type Ref } from "vue"
import type { ApiError } from "./api"
import { useQueryFilters } from "./queryFilters"
import { useResource } from "./resource"

/** What `CursorList` shows of a list: its state, and the way to older and newer pages. */
export interface CursorPages {
  readonly page: {
    readonly loading: Ref<boolean>
    readonly error: Ref<ApiError | undefined>
    readonly reload: () => Promise<void>
  }
  readonly hasOlder: ComputedRef<boolean>
  readonly hasNewer: ComputedRef<boolean>
  readonly older: () => void
  readonly newer: () => void
}

/**
 * A list the server pages with cursors, newest first, its filters kept in the URL: the page, and "Older" and
 * "Newer" along the cursors followed from the first page, so "Newer" walks back the same way. Applying or
 * clearing the filters starts again from the first page.
 */
export function useCursorPages<K extends string, P extends { readonly next_cursor: string | null }>(
  keys: ReadonlyArray<K>,
  load: (query: Record<K | "cursor", string>) => Promise<P>,
) {
  const filters = useQueryFilters(keys)
  const page = useResource(
    () => load({ ...filters.applied.value, cursor: filters.cursor.value }),
    () => [filters.applied.value, filters.cursor.value],
  )
  const trail = ref<Array<string>>([])
  return {
    filters,
    page,
    /** Whether any filter is applied: an empty page then says nothing matches, otherwise that there is nothing yet. */
    filtered: computed(() => Object.values<string>(filters.applied.value).some((value) => value !== "")),
    hasOlder: computed(() => !!page.data.value?.next_cursor),
    hasNewer: computed(() => filters.cursor.value !== ""),
    older: () => {
      const next = page.data.value?.next_cursor
      if (!next) return
      trail.value.push(filters.cursor.value)
      void filters.goTo(next)
    },
    newer: () => void filters.goTo(trail.value.pop() ?? null),
    apply: () => {
      trail.value = []
      void filters.apply()
    },
    reset: () => {
      trail.value = []
      void filters.reset()
    },
  }
}

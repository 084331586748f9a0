import { computed, reactive, watch } from "vue"
import { useRoute, useRouter } from "vue-router"

/**
 * Filter state kept in the URL, so a link reproduces the view: `applied` is what the URL says (what the page
 * loads), `draft` what the form holds until the operator applies it. Changing filters drops the cursor.
 */
export function useQueryFilters<K extends string>(keys: ReadonlyArray<K>) {
  const route = useRoute()
  const router = useRouter()
  const read = (): Record<K, string> => {
    const values = {} as Record<K, string>
    for (const key of keys) {
      const value = route.query[key]
      values[key] = typeof value === "string" ? value : ""
    }
    return values
  }
  const applied = computed(read)
  const cursor = computed(() => (typeof route.query.cursor === "string" ? route.query.cursor : ""))
  const draft = reactive(read()) as Record<K, string>
  watch(applied, (values) => Object.assign(draft, values))

  const clean = (values: Record<string, string>) =>
    Object.fromEntries(Object.entries(values).filter(([, value]) => value !== ""))

  return {
    applied,
    cursor,
    draft,
    apply: () => router.push({ query: clean({ ...draft }) }),
    reset: () => router.push({ query: {} }),
    goTo: (next: string | null) =>
      router.push({ query: clean({ ...applied.value, ...(next ? { cursor: next } : {}) }) }),
  }
}

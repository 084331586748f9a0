import { ref } from "vue"
import type { OwnerRef, ProviderRef } from "../types"
import { api, withQuery } from "./api"

const providers = ref<ReadonlyArray<ProviderRef>>([])
const eventTypes = ref<ReadonlyArray<string>>([])
let loaded: Promise<void> | undefined

/** Providers and the event catalog for the filters: small lists, asked once per page load. */
export function useReferenceData() {
  loaded ??= Promise.all([
    api<{ providers: ReadonlyArray<ProviderRef> }>("GET", "/api/providers").then(
      (b) => (providers.value = b.providers),
    ),
    api<{ event_types: ReadonlyArray<string> }>("GET", "/api/event-types").then(
      (b) => (eventTypes.value = b.event_types),
    ),
  ]).then(
    () => undefined,
    // The filters still work as free text when the lists cannot be had; a later page load asks again.
    () => void (loaded = undefined),
  )
  return { providers, eventTypes }
}

/** Owners whose slug or name starts with `q`, for the owner filter's suggestions. */
export const searchOwners = async (q: string) =>
  (await api<{ owners: ReadonlyArray<OwnerRef> }>("GET", withQuery("/api/owners", { q }))).owners

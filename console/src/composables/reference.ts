import { ref } from "vue"
import { EventTypesAnswer, OwnersAnswer, ProvidersAnswer } from "../schemas"
import type { ProviderRef } from "../types"
import { api, withQuery } from "./api"

const providers = ref<ReadonlyArray<ProviderRef>>([])
const eventTypes = ref<ReadonlyArray<string>>([])
let loaded: Promise<void> | undefined

/** Providers and the event catalog for the filters: small lists, asked once per page load. */
export function useReferenceData() {
  loaded ??= Promise.all([
    api(ProvidersAnswer, "GET", "/api/providers").then((b) => (providers.value = b.providers)),
    api(EventTypesAnswer, "GET", "/api/event-types").then((b) => (eventTypes.value = b.event_types)),
  ]).then(
    () => undefined,
    // The filters still work as free text when the lists cannot be had; a later page load asks again.
    () => void (loaded = undefined),
  )
  return { providers, eventTypes }
}

/** Owners whose slug or name starts with `q`, for the owner filter's suggestions. */
export const searchOwners = async (q: string) =>
  (await api(OwnersAnswer, "GET", withQuery("/api/owners", { q }))).owners

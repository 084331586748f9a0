import { computed, readonly, ref, shallowRef } from "vue"
import type { SessionAnswer } from "../../../backend/portal/Api.ts"
import { ApiError } from "../composables/api"
import { getSession, linkPortalSession } from "./api"

/**
 * The portal session the page was opened with: loaded once before the app mounts. It ends when any call answers
 * 401 or the live view says `session_ended`; the app then shows only how to open the portal again.
 */

const session = shallowRef<SessionAnswer>()
const ended = ref(false)
const failure = shallowRef<ApiError>()

const end = () => {
  ended.value = true
}

/** Reads the session; a 401 ends it, another failure is kept to show. */
export const loadSession = async () => {
  try {
    const answer = await getSession()
    linkPortalSession(answer.csrf_token, end)
    session.value = answer
  } catch (cause) {
    if (cause instanceof ApiError && cause.status === 401) end()
    else failure.value = cause instanceof ApiError ? cause : new ApiError(0, String(cause))
  }
}

export const endSession = end

/** Whose portal this is, as its header names it. */
const holderName = (answer: SessionAnswer) =>
  answer.brand?.name ?? answer.owner?.name ?? answer.provider?.name ?? "Webhooks"

export function usePortalSession() {
  return {
    session: readonly(session),
    ended: readonly(ended),
    failure: readonly(failure),
    /** Whether the session may change anything: a read-only one is shown no control that would. */
    canChange: computed(() => session.value !== undefined && !session.value.read_only),
    holder: computed(() => (session.value ? holderName(session.value) : "")),
  }
}

import { computed, ref } from "vue"
import { SessionBody } from "../schemas"
import type { Role } from "../types"
import { api, send } from "./api"

const session = ref<SessionBody | null>(null)
let loaded: Promise<SessionBody | null> | undefined

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 }

export const csrfToken = () => session.value?.csrf_token

export const clearSession = () => {
  session.value = null
  loaded = undefined
}

/** The signed-in operator, asked of the server once per page load (the cookie is HttpOnly). */
export const loadSession = (): Promise<SessionBody | null> => {
  loaded ??= api(SessionBody, "GET", "/api/session").then(
    (body) => (session.value = body),
    () => (session.value = null),
  )
  return loaded
}

export const signIn = async (email: string, password: string) => {
  const body = await api(SessionBody, "POST", "/api/session", { email, password })
  session.value = body
  loaded = Promise.resolve(body)
  return body
}

export const signOut = async () => {
  try {
    await send("DELETE", "/api/session")
  } finally {
    clearSession()
  }
}

/** Whether the signed-in operator's role reaches `role`; buttons a role may not use are not shown. */
export const hasRole = (role: Role) =>
  session.value !== null && RANK[session.value.operator.role] >= RANK[role]

export function useSession() {
  return {
    session,
    operator: computed(() => session.value?.operator ?? null),
    can: hasRole,
    signOut,
  }
}

import { Effect } from "effect"
import { Forbidden, type Guard, Unauthorized } from "../../platform/Http.ts"
import { isRole, type Role, roleAtLeast } from "../Domain.ts"
import { Sessions } from "../Sessions.ts"
import { sessionToken } from "./Cookie.ts"

export const CSRF_HEADER = "x-csrf-token"
const SCOPE_PREFIX = "console:"

/** The route's access for operators of `role` and above. */
export const needs = (role: Role) => ({ scope: `${SCOPE_PREFIX}${role}` })

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/**
 * The console's guard: a live session (401), the CSRF token on every state-changing call and a role at least the
 * route's (403). The caller is the operator's email with its role as its one scope.
 */
export const operatorGuard: Guard<Sessions> = {
  authenticate: (route, request) =>
    Effect.gen(function* () {
      const sessions = yield* Sessions
      const session = yield* sessions.current(sessionToken(request.headers))
      if (session === undefined) return yield* new Unauthorized()
      if (
        !SAFE_METHODS.has(request.method) &&
        !sessions.csrfMatches(session, request.headers.get(CSRF_HEADER))
      ) {
        return yield* new Forbidden()
      }
      const scope = route.access === "public" ? undefined : route.access.scope
      const needed = scope?.startsWith(SCOPE_PREFIX) ? scope.slice(SCOPE_PREFIX.length) : undefined
      if (!isRole(needed) || !roleAtLeast(session.operator.role, needed)) return yield* new Forbidden()
      return {
        clientId: session.operator.email,
        scopes: new Set([`${SCOPE_PREFIX}${session.operator.role}`]),
      }
    }),
}

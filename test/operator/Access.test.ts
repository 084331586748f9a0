import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { routesFor } from "../../backend/App.ts"
import { Roles } from "../../backend/operator/Domain.ts"
import { FORBIDDEN, UNAUTHORIZED } from "../support/Auth.ts"
import { call, consoleService, operatorSession, type SignedIn, signIn } from "../support/Operator.ts"

/** Every route the console role serves under /api, read from the routes themselves: a new one is covered. */
const apiRoutes = routesFor("console", "development").filter(
  (route) => route.path.startsWith("/api/") && route.access !== "public",
)

const roleOf = (access: (typeof apiRoutes)[number]["access"]) =>
  access === "public" ? undefined : (access.scope.replace(/^console:/, "") as (typeof Roles)[number])

/** The route's path with every parameter filled with something that names nothing. */
const concrete = (path: string) => path.replace(/:email\b/g, "nobody%40example.com").replace(/:\w+/g, "1")

const sends = (method: string) => !["GET", "HEAD"].includes(method)

describe("every /api route of the console", () => {
  layer(consoleService().layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("answers 401 without a session, 403 without the CSRF token, and 403 to too low a role", () =>
      Effect.gen(function* () {
        // The table is the routes: each role's routes are there, reads and writes.
        for (const role of Roles)
          assert.isTrue(
            apiRoutes.some((route) => roleOf(route.access) === role),
            role,
          )
        assert.isTrue(apiRoutes.some((route) => sends(route.method)))
        const sessions: Record<string, SignedIn> = {}
        for (const role of Roles) sessions[role] = yield* operatorSession(`${role}@access.test`, role)
        const refusals: Array<[string, string, number, string]> = []
        const neededBy = new Map<string, string>()
        for (const route of apiRoutes) {
          const path = concrete(route.path)
          const label = `${route.method} ${route.path}`
          const body = sends(route.method) ? {} : undefined
          const anonymous = yield* call(route.method, path, { ...(body ? { body } : {}) })
          assert.strictEqual(anonymous.status, 401, label)
          assert.strictEqual(anonymous.text, UNAUTHORIZED, label)
          const stale = yield* call(route.method, path, { cookie: "console_session=not-a-session", body })
          assert.strictEqual(stale.status, 401, label)

          const needed = roleOf(route.access)!
          neededBy.set(label, needed)
          const entitled = sessions[needed]!
          if (sends(route.method)) {
            const without = yield* call(route.method, path, { cookie: entitled.cookie, body })
            assert.strictEqual(without.status, 403, label)
            assert.strictEqual(without.text, FORBIDDEN, label)
            // Another session's token is no better.
            const other = sessions[needed === "admin" ? "operator" : "admin"]!
            const wrong = yield* call(route.method, path, { cookie: entitled.cookie, csrf: other.csrf, body })
            assert.strictEqual(wrong.status, 403, label)
          }
          // Every role below the one it needs, not only the next, is refused, with its own valid token.
          for (const lower of Roles.slice(0, Roles.indexOf(needed))) {
            const low = sessions[lower]!
            const refused = yield* call(route.method, path, { cookie: low.cookie, csrf: low.csrf, body })
            refusals.push([label, lower, refused.status, refused.text])
          }
          // The role it needs, with its token, gets past the guard (whatever the route then says of the input).
          const allowed = yield* call(route.method, path, {
            cookie: entitled.cookie,
            csrf: entitled.csrf,
            body,
          })
          assert.notInclude([401, 403, 500], allowed.status, `${label}: ${allowed.text}`)
          // Signing out ends the session the table uses: a new one for the next routes.
          if ((yield* call("GET", "/api/session", entitled)).status === 401) {
            sessions[needed] = yield* signIn(entitled.email)
          }
        }
        // Routes × lower roles, every pair of a role and one below it among them (an admin route refused to the
        // viewer as well as to the operator).
        assert.sameMembers(
          [...new Set(refusals.map(([label, lower]) => `${neededBy.get(label)} > ${lower}`))],
          ["operator > viewer", "admin > viewer", "admin > operator"],
        )
        assert.deepStrictEqual(
          refusals.filter(([, , status, text]) => status !== 403 || text !== FORBIDDEN),
          [],
          "a lower role was not refused with the 403",
        )
      }),
    )

    it.effect("answers an unknown /api path with the JSON 404", () =>
      Effect.gen(function* () {
        const answer = yield* call("GET", "/api/no-such-thing")
        assert.strictEqual(answer.status, 404)
        assert.strictEqual(answer.text, `{"status_code":404,"error":"Not found."}`)
      }),
    )
  })
})

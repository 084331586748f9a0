import { Effect } from "effect"
import { AppConfig } from "../../platform/Config.ts"
import { type HttpRequest, json, Unauthorized } from "../../platform/Http.ts"
import { hasControlCharacter } from "../../platform/Text.ts"
import { LiveFeed } from "../LiveFeed.ts"
import { ABSOLUTE_TIMEOUT_MS, type CurrentSession, Sessions } from "../Sessions.ts"
import { sessionCookie, sessionToken } from "./Cookie.ts"
import { invalid, objectBody, route } from "./Route.ts"

const sessionBody = (session: Pick<CurrentSession, "operator" | "csrfToken">) => ({
  operator: { email: session.operator.email, role: session.operator.role },
  csrf_token: session.csrfToken,
})

const signIn = route("POST", "/api/session", "public", (request) =>
  Effect.gen(function* () {
    const body = yield* objectBody(request, "session")
    const fields: Record<string, string> = {}
    for (const name of ["email", "password"] as const) {
      const value = body[name]
      if (typeof value !== "string" || value.length === 0) fields[name] = "is required"
      else if (value.length > 1024 || hasControlCharacter(value)) fields[name] = "is not valid"
    }
    if (Object.keys(fields).length > 0) return yield* invalid("Invalid sign-in.", "session", fields)
    const secure = (yield* AppConfig).serviceEnv !== "development"
    return yield* (yield* Sessions)
      .signIn(body.email as string, body.password as string, request.remoteAddress)
      .pipe(
        Effect.map((signed) =>
          json(200, sessionBody(signed), {
            "set-cookie": sessionCookie(signed.token, ABSOLUTE_TIMEOUT_MS / 1000, secure),
            "cache-control": "no-store",
          }),
        ),
        Effect.catchTags({
          SignInRefused: () => Effect.succeed(json(401, { message: "Email or password is incorrect." })),
          SignInThrottled: (error) =>
            Effect.succeed(
              json(
                429,
                {
                  message: `Too many failed sign-in attempts for this email from your address; try again in ${error.retryAfterSeconds} seconds.`,
                },
                { "retry-after": String(error.retryAfterSeconds) },
              ),
            ),
          SignInsInProgress: (error) =>
            Effect.succeed(
              json(
                429,
                {
                  message: "Too many sign-in attempts in progress from your address; try again in a moment.",
                },
                { "retry-after": String(error.retryAfterSeconds) },
              ),
            ),
        }),
      )
  }),
)

/** The guard has checked the session; it is read again for its CSRF token. */
const currentSession = (request: HttpRequest) =>
  Effect.gen(function* () {
    const sessions = yield* Sessions
    const session = yield* sessions.current(sessionToken(request.headers))
    if (session === undefined) return yield* new Unauthorized()
    return { sessions, session }
  })

/** Signing in and out, and the current session with its CSRF token. */
export const sessionRoutes = [
  signIn,
  route("GET", "/api/session", "viewer", (request) =>
    Effect.map(currentSession(request), ({ session }) =>
      json(200, sessionBody(session), { "cache-control": "no-store" }),
    ),
  ),
  route("DELETE", "/api/session", "viewer", (request) =>
    Effect.gen(function* () {
      const { sessions, session } = yield* currentSession(request)
      yield* sessions.signOut(session)
      const live = yield* LiveFeed
      // This process's live streams of the session end now; any other's at its next session check.
      live.endSession(session.id)
      const secure = (yield* AppConfig).serviceEnv !== "development"
      return new Response(null, { status: 204, headers: { "set-cookie": sessionCookie("", 0, secure) } })
    }),
  ),
]

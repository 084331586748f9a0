import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Operators } from "../../backend/operator/Operators.ts"
import { UNAUTHORIZED } from "../support/Auth.ts"
import {
  advanceClock,
  call,
  consoleService,
  createOperator,
  operatorSession,
  holdClock,
  signIn,
} from "../support/Operator.ts"

const REFUSED = `{"message":"Email or password is incorrect."}`
const MINUTE = 60_000

describe("console sessions", () => {
  layer(consoleService({ SERVICE_ENV: "development" }).layer, { excludeTestServices: true, timeout: 60_000 })(
    (it) => {
      it.effect("signs in with a session cookie and a CSRF token, and answers who is signed in", () =>
        Effect.gen(function* () {
          yield* createOperator("Ada@Example.com", "operator")
          // The email is matched whatever its case.
          const answer = yield* call("POST", "/api/session", {
            body: { email: "ada@example.COM", password: "correct horse battery" },
          })
          assert.strictEqual(answer.status, 200, answer.text)
          assert.deepStrictEqual(answer.body.operator, { email: "Ada@Example.com", role: "operator" })
          assert.match(answer.body.csrf_token, /^[A-Za-z0-9_-]{43}$/)
          const setCookie = answer.headers.get("set-cookie")!
          assert.match(setCookie, /^console_session=[A-Za-z0-9_-]{43};/)
          for (const attribute of ["HttpOnly", "SameSite=Strict", "Path=/"])
            assert.include(setCookie, attribute)
          // Development serves plain HTTP on localhost: no Secure there.
          assert.notInclude(setCookie, "Secure")
          const cookie = setCookie.split(";")[0]!
          const current = yield* call("GET", "/api/session", { cookie })
          assert.strictEqual(current.status, 200)
          assert.deepStrictEqual(current.body, answer.body)
        }),
      )

      it.effect("gives a wrong password and an unknown email the same answer", () =>
        Effect.gen(function* () {
          yield* createOperator("bob@example.com", "viewer")
          const wrong = yield* call("POST", "/api/session", {
            body: { email: "bob@example.com", password: "nope-nope-nope" },
          })
          const unknown = yield* call("POST", "/api/session", {
            body: { email: "nobody@example.com", password: "correct horse battery" },
          })
          assert.strictEqual(wrong.status, 401)
          assert.strictEqual(wrong.text, REFUSED)
          assert.strictEqual(unknown.status, 401)
          assert.strictEqual(unknown.text, REFUSED)
          assert.isNull(wrong.headers.get("set-cookie"))
          const missing = yield* call("POST", "/api/session", { body: { email: "bob@example.com" } })
          assert.strictEqual(missing.status, 422)
          assert.strictEqual(missing.body.session.password, "is required")
        }),
      )

      it.effect(
        "slows down repeated failures of one email, longer each time, and lets the right password in after",
        () =>
          Effect.gen(function* () {
            yield* holdClock
            yield* createOperator("carol@example.com", "viewer")
            const attempt = (password: string) =>
              call("POST", "/api/session", { body: { email: "carol@example.com", password } })
            for (let i = 0; i < 5; i++) assert.strictEqual((yield* attempt("wrong-password!")).status, 401)
            const throttled = yield* attempt("correct horse battery")
            assert.strictEqual(throttled.status, 429)
            assert.strictEqual(throttled.headers.get("retry-after"), "30")
            assert.strictEqual(
              throttled.text,
              `{"message":"Too many failed sign-in attempts for this email from your address; try again in 30 seconds."}`,
            )
            // Another email is not slowed by carol's failures.
            yield* createOperator("dave@example.com", "viewer")
            yield* signIn("dave@example.com")
            yield* advanceClock(31_000)
            assert.strictEqual((yield* attempt("wrong-password!")).status, 401)
            const longer = yield* attempt("correct horse battery")
            assert.strictEqual(longer.status, 429)
            assert.strictEqual(longer.headers.get("retry-after"), "60")
            yield* advanceClock(61_000)
            assert.strictEqual((yield* attempt("correct horse battery")).status, 200)
            // A success forgets the failures.
            assert.strictEqual((yield* attempt("wrong-password!")).status, 401)
            assert.strictEqual((yield* attempt("correct horse battery")).status, 200)
          }),
      )

      it.effect("ends a session after 30 idle minutes", () =>
        Effect.gen(function* () {
          yield* holdClock
          const session = yield* operatorSession("erin@example.com", "viewer")
          yield* advanceClock(29 * MINUTE)
          assert.strictEqual((yield* call("GET", "/api/session", session)).status, 200)
          yield* advanceClock(29 * MINUTE)
          assert.strictEqual((yield* call("GET", "/api/session", session)).status, 200)
          yield* advanceClock(31 * MINUTE)
          const expired = yield* call("GET", "/api/session", session)
          assert.strictEqual(expired.status, 401)
          assert.strictEqual(expired.text, UNAUTHORIZED)
        }),
      )

      it.effect("ends a session 12 hours after sign-in however active it is", () =>
        Effect.gen(function* () {
          yield* holdClock
          const session = yield* operatorSession("frank@example.com", "viewer")
          let elapsed = 0
          while (elapsed + 25 * MINUTE < 12 * 60 * MINUTE) {
            yield* advanceClock(25 * MINUTE)
            elapsed += 25 * MINUTE
            assert.strictEqual((yield* call("GET", "/api/endpoints", session)).status, 200)
          }
          yield* advanceClock(12 * 60 * MINUTE - elapsed)
          assert.strictEqual((yield* call("GET", "/api/endpoints", session)).status, 401)
        }),
      )

      it.effect("signs out: DELETE needs the CSRF token, then the session is revoked server-side", () =>
        Effect.gen(function* () {
          const session = yield* operatorSession("gina@example.com", "viewer")
          const noToken = yield* call("DELETE", "/api/session", { cookie: session.cookie })
          assert.strictEqual(noToken.status, 403)
          const out = yield* call("DELETE", "/api/session", session)
          assert.strictEqual(out.status, 204)
          assert.match(out.headers.get("set-cookie")!, /^console_session=; .*Max-Age=0/)
          // The same cookie, replayed, names a revoked session.
          assert.strictEqual((yield* call("GET", "/api/session", session)).status, 401)
        }),
      )

      it.effect("ends a disabled operator's sessions and refuses its sign-in like a wrong password", () =>
        Effect.gen(function* () {
          const session = yield* operatorSession("hank@example.com", "operator")
          const operators = yield* Operators
          yield* operators.update("hank@example.com", { disabled: true }, "cli:test").pipe(Effect.orDie)
          assert.strictEqual((yield* call("GET", "/api/session", session)).status, 401)
          const again = yield* call("POST", "/api/session", {
            body: { email: "hank@example.com", password: "correct horse battery" },
          })
          assert.strictEqual(again.status, 401)
          assert.strictEqual(again.text, REFUSED)
        }),
      )

      it.effect("applies a role change on the next request", () =>
        Effect.gen(function* () {
          const session = yield* operatorSession("ivy@example.com", "admin")
          assert.strictEqual((yield* call("GET", "/api/operators", session)).status, 200)
          yield* (yield* Operators)
            .update("ivy@example.com", { role: "viewer" }, "cli:test")
            .pipe(Effect.orDie)
          assert.strictEqual((yield* call("GET", "/api/operators", session)).status, 403)
          assert.strictEqual((yield* call("GET", "/api/session", session)).body.operator.role, "viewer")
        }),
      )
    },
  )
})

describe("console sessions outside development", () => {
  layer(consoleService({ SERVICE_ENV: "staging" }).layer, { excludeTestServices: true, timeout: 60_000 })(
    (it) => {
      it.effect("mark the cookie Secure", () =>
        Effect.gen(function* () {
          yield* createOperator("jo@example.com", "viewer")
          const answer = yield* call("POST", "/api/session", {
            body: { email: "jo@example.com", password: "correct horse battery" },
          })
          assert.strictEqual(answer.status, 200)
          assert.include(answer.headers.get("set-cookie")!, "; Secure")
        }),
      )
    },
  )
})

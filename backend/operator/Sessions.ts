import { Clock, Context, Effect, Layer } from "effect"
import { throttleSource } from "../platform/ClientAddress.ts"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual, Crypto, randomToken } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { HashSlots, makeSourceCap, REFUSAL_HOLD } from "../platform/HashSlots.ts"
import { metrics } from "../platform/Observability.ts"
import { type OperatorView, SignInRefused, SignInsInProgress, SignInThrottled } from "./Domain.ts"
import { operatorView } from "./Operators.ts"
import { OperatorRepo } from "./Repo.ts"

/** A session ends after 30 minutes without a request, and 12 hours after sign-in whatever happens. */
export const IDLE_TIMEOUT_MS = 30 * 60_000
export const ABSOLUTE_TIMEOUT_MS = 12 * 3_600_000

/** Failures counted over this window; from the 5th on, each next try waits longer. */
export const FAILURE_WINDOW_MS = 15 * 60_000
export const FREE_FAILURES = 5
const FIRST_WAIT_MS = 30_000
const FIRST_DELAY_MS = 250
const MAX_DELAY_MS = 2_000

/**
 * How long after its latest failure one source must wait before trying an email again, given that source's
 * failures for it in the window: nothing for the first four, then 30 s doubling with each further failure, at most
 * the window itself.
 */
export const throttleWaitMs = (failures: number) =>
  failures < FREE_FAILURES ? 0 : Math.min(FIRST_WAIT_MS * 2 ** (failures - FREE_FAILURES), FAILURE_WINDOW_MS)

/**
 * How long every sign-in of an email is held before it is answered, given the email's failures in the window from
 * every source: none for the first four, then 250 ms doubling up to 2 s. It slows a guesser spread over many
 * addresses without ever refusing anyone.
 */
export const signInDelayMs = (failures: number) =>
  failures < FREE_FAILURES ? 0 : Math.min(FIRST_DELAY_MS * 2 ** (failures - FREE_FAILURES), MAX_DELAY_MS)

/** Where a sign-in's password check waits for a hash slot: its address's own lane, or the strangers'. */
type SignInLane = "address" | "stranger"

export interface SignedIn {
  readonly operator: OperatorView
  /** The cookie's value; only its hash is stored. */
  readonly token: string
  readonly csrfToken: string
}

export interface CurrentSession {
  readonly id: string
  readonly operator: OperatorView
  readonly csrfToken: string
}

/** Console sign-in and server-side sessions, timed by Effect's Clock. */
export class Sessions extends Context.Service<Sessions>()("partner-service/operator/Sessions", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* OperatorRepo
    const config = yield* AppConfig
    const hashSlots = yield* HashSlots
    // A hash of a random password: signing in with an unknown email costs what a real check does.
    const decoy = yield* (yield* Crypto).hashSecret(randomToken(32))
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    /**
     * A password checked in the process's hash slots, shared with `/token`. An address with fewer than
     * `FREE_FAILURES` failures in the window (whatever the emails) waits in a lane of its own, so a real operator
     * never queues behind a flood from elsewhere; every other check shares the strangers' lane. The lane does not
     * depend on the email, so how long an answer takes tells nothing of which accounts exist.
     */
    const checkPassword = (source: string, lane: SignInLane, password: string, hash: string) =>
      hashSlots.check(lane === "address" ? `console address ${source}` : "console stranger", password, hash, {
        waiting: metrics.signInChecksWaiting.labels({ lane }),
        begun: { inc: () => metrics.signInChecks.inc({ lane }) },
        hashing: metrics.signInHashes,
      })

    const inProgress = makeSourceCap(config.secretChecksPerSource)
    const tooManyInProgress = Effect.suspend(() => {
      metrics.signInsThrottled.inc({ reason: "in progress" })
      return Effect.fail(new SignInsInProgress({ retryAfterSeconds: 1 }))
    })

    /**
     * Checks the password (a decoy hash stands in for an unknown email, so both take as long); a disabled
     * operator is refused like a wrong password. A source (the client's address, an IPv6 address's /64) may have
     * `SECRET_CHECKS_PER_SOURCE` sign-ins in progress; one with too many recent failures for the email is refused
     * before anything is checked; anyone else is only held a little longer the more the email failed from
     * everywhere.
     */
    const signIn = Effect.fn("Sessions.signIn")(function* (email: string, password: string, address = "") {
      const source = throttleSource(address)
      return yield* inProgress(
        source,
        Effect.gen(function* () {
          const at = yield* now
          const key = email.trim().toLowerCase()
          const windowStart = new Date(at.getTime() - FAILURE_WINDOW_MS)
          const failures = yield* repo.recentFailures(key, source, windowStart)
          const wait = throttleWaitMs(failures.length)
          const latest = failures[0]
          if (wait > 0 && latest !== undefined && latest.getTime() + wait > at.getTime()) {
            const retryAfterSeconds = Math.ceil((latest.getTime() + wait - at.getTime()) / 1000)
            metrics.signInsThrottled.inc({ reason: "failures" })
            yield* Effect.logWarning("operator sign-in throttled").pipe(
              Effect.annotateLogs({ failures: failures.length, retry_after_seconds: retryAfterSeconds }),
            )
            yield* Effect.sleep(REFUSAL_HOLD)
            return yield* new SignInThrottled({ retryAfterSeconds })
          }
          const delay = signInDelayMs(yield* repo.failureCount(key, windowStart))
          if (delay > 0) yield* Effect.sleep(delay)
          const operator = yield* repo.operatorByEmail(key)
          const sourceFailures = yield* repo.sourceFailureCount(source, windowStart, FREE_FAILURES)
          const lane: SignInLane = sourceFailures < FREE_FAILURES ? "address" : "stranger"
          const matches = yield* checkPassword(source, lane, password, operator?.password_hash ?? decoy)
          if (operator === undefined || !matches || operator.disabled) {
            yield* repo.recordFailure(key, source, at, windowStart)
            return yield* new SignInRefused()
          }
          const token = randomToken(32)
          const csrfToken = randomToken(32)
          yield* db.transaction(
            Effect.gen(function* () {
              yield* repo.insertSession(operator.id, token, csrfToken, at)
              yield* repo.signedIn(operator.id, at)
              yield* repo.clearFailures(key, source)
            }),
          )
          return {
            operator: operatorView({ ...operator, last_sign_in_at: at }),
            token,
            csrfToken,
          } satisfies SignedIn
        }),
        tooManyInProgress,
      )
    })

    /**
     * The live session a cookie's token names, its idle time restarted; undefined when there is none, it was
     * revoked, it timed out, or its operator is disabled.
     */
    const current = Effect.fn("Sessions.current")(function* (token: string | undefined) {
      if (token === undefined || token.length === 0 || token.length > 128) return undefined
      const session = yield* repo.sessionByToken(token)
      if (session === undefined || session.revoked_at !== null) return undefined
      const at = yield* now
      if (
        at.getTime() - session.last_seen_at.getTime() >= IDLE_TIMEOUT_MS ||
        at.getTime() - session.created_at.getTime() >= ABSOLUTE_TIMEOUT_MS
      ) {
        yield* repo.revokeSession(session.id, at)
        return undefined
      }
      const operator = yield* repo.operatorById(session.operator_id)
      if (operator === undefined || operator.disabled) return undefined
      yield* repo.touchSession(session.id, at)
      return {
        id: session.id,
        operator: operatorView(operator),
        csrfToken: session.csrf_token,
      } satisfies CurrentSession
    })

    /**
     * Whether the session is still live, without restarting its idle time: a live view open in a tab is not a
     * request, so it does not keep an idle session alive.
     */
    const stillLive = Effect.fn("Sessions.stillLive")(function* (id: string) {
      const session = yield* repo.sessionById(id)
      if (session === undefined || session.revoked_at !== null) return false
      const at = yield* now
      if (
        at.getTime() - session.last_seen_at.getTime() >= IDLE_TIMEOUT_MS ||
        at.getTime() - session.created_at.getTime() >= ABSOLUTE_TIMEOUT_MS
      ) {
        return false
      }
      const operator = yield* repo.operatorById(session.operator_id)
      return operator !== undefined && !operator.disabled
    })

    /** Whether `header` carries the session's CSRF token (compared in constant time). */
    const csrfMatches = (session: CurrentSession, header: string | null) =>
      header !== null && constantTimeEqual(header, session.csrfToken)

    const signOut = Effect.fn("Sessions.signOut")(function* (session: CurrentSession) {
      yield* repo.revokeSession(session.id, yield* now)
    })

    return { signIn, current, stillLive, csrfMatches, signOut }
  }),
}) {
  static readonly layer = Layer.effect(Sessions, Sessions.make).pipe(
    Layer.provide(OperatorRepo.layer),
    Layer.provide(Crypto.layer),
    Layer.provide(HashSlots.layer),
  )
}

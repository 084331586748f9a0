import { Cause, Data, Effect } from "effect"

/**
 * A dependency that did not answer: Postgres refused or dropped the connection, or NATS did not acknowledge a
 * publish. It is expected (a failover, a restart, an outage) and passes by itself, so it is reported as a 503 with
 * `Retry-After`, a nak, or a warning, never as a bug. It travels as a defect, as every infrastructure failure does,
 * so services' interfaces keep showing only their domain errors.
 */
export class DependencyUnavailable extends Data.TaggedError("DependencyUnavailable")<{
  readonly dependency: "postgres" | "nats"
  readonly reason: string
}> {}

/** The unavailable dependency a failure came from, if it came from one. */
export const unavailableIn = (cause: Cause.Cause<unknown>): DependencyUnavailable | undefined => {
  for (const reason of cause.reasons) {
    if (Cause.isDieReason(reason) && reason.defect instanceof DependencyUnavailable) return reason.defect
  }
  return undefined
}

/**
 * SQLSTATE classes and codes that mean the server, not the statement, failed (PostgreSQL, Appendix A): a lost
 * connection (08), an operator's intervention or a shutdown (57), too many connections, an I/O error, and a write
 * refused as read-only (25006), which is what a standby or a demoted primary answers during a failover.
 */
const serverGone = /^(08|57|25006$|53300$|58030$)/
/** The driver's and the socket's own codes for a connection that could not be made or was lost. */
const connectionLost = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
])

/** The error a database call failed with, as `DependencyUnavailable` when Postgres itself is not answering. */
export const databaseFailure = (error: unknown): unknown => {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === "string" && (connectionLost.has(code) || serverGone.test(code))
    ? new DependencyUnavailable({ dependency: "postgres", reason: `${code}: ${(error as Error).message}` })
    : error
}

/**
 * Logs why a pass of a background loop failed: a warning naming the dependency when one was unavailable (it passes
 * by itself), an error with the whole cause otherwise (a bug).
 */
export const logFailedPass = (message: string, cause: Cause.Cause<unknown>) => {
  const unavailable = unavailableIn(cause)
  return unavailable
    ? Effect.logWarning(`${message}: ${unavailable.dependency} unavailable`).pipe(
        Effect.annotateLogs({ reason: unavailable.reason }),
      )
    : Effect.logError(message).pipe(Effect.annotateLogs({ cause: Cause.pretty(cause) }))
}

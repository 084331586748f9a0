import { Context, Effect } from "effect"
import type { DbShape } from "../platform/Db.ts"
import type { AuditChannelName } from "./Channels.ts"

/*
 * The audit log: every operator action, whichever context carries it out (roster, webhooks, policies, operator,
 * the CLI), is appended here in that context's own transaction. It sits below the contexts so that each of them
 * records its actions without importing `operator/`, which reads the log back for the console.
 */

/**
 * The channel audit entries written in this fiber carry. The console's routes set `console`, the portal's
 * `portal`; the CLI runs with the default.
 */
export const AuditChannel = Context.Reference<AuditChannelName>("partner-service/audit/AuditChannel", {
  defaultValue: () => "cli",
})

/**
 * Details every audit entry written in this fiber adds to its own: whose data an outside actor acted on (the
 * portal's routes set the session's owner or provider). An entry's own details win over these.
 */
export const AuditDetails = Context.Reference<Readonly<Record<string, unknown>>>(
  "partner-service/audit/AuditDetails",
  { defaultValue: () => ({}) },
)

/** One operator action: who, what, on which target, and the target's state before and after (when it has one). */
export interface AuditEntry {
  readonly actor: string
  readonly action: string
  readonly target: string
  readonly before?: unknown
  readonly after?: unknown
  /** Anything else worth keeping that is neither state (a count, a reason). */
  readonly details?: Readonly<Record<string, unknown>>
}

/**
 * Appends `entry` to the audit log, in the caller's transaction when there is one, so an entry exists exactly
 * when the change it records was committed. Every context writes its operator actions through this one
 * statement; the table refuses any later change.
 */
export const recordAudit = (db: DbShape, entry: AuditEntry) =>
  Effect.gen(function* () {
    const channel = yield* AuditChannel
    const details = { ...(yield* AuditDetails), ...entry.details }
    const jsonOrNull = (value: unknown) => (value === undefined ? null : value)
    yield* db.query(
      (sql) => sql`
        insert into audit_log (actor, channel, action, target, details, before, after)
        values (${entry.actor}, ${channel}, ${entry.action}, ${entry.target},
                ${sql.json(details as never)},
                ${jsonOrNull(entry.before) === null ? null : sql.json(entry.before as never)},
                ${jsonOrNull(entry.after) === null ? null : sql.json(entry.after as never)})`,
    )
  })

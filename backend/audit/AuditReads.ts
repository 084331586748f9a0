import { Context, Effect, Layer } from "effect"
import { Db, escapeLike } from "../platform/Db.ts"

export interface AuditRow {
  readonly id: string
  readonly actor: string
  readonly channel: string
  readonly action: string
  readonly target: string
  readonly before: unknown
  readonly after: unknown
  readonly details: Record<string, unknown>
  readonly created_at: Date
}

export interface AuditFilter {
  readonly actor?: string | undefined
  readonly action?: string | undefined
  readonly target?: string | undefined
  readonly since?: Date | undefined
  readonly until?: Date | undefined
  /** Entries older than this id (the cursor). */
  readonly before?: string | undefined
  readonly limit: number
}

/**
 * The audit log as the console reads it: entries newest first, filtered by actor, action (any containing the
 * text), target and time. Only `recordAudit` writes it.
 */
export class AuditReads extends Context.Service<AuditReads>()("partner-service/audit/AuditReads", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      entries: (filter: AuditFilter) =>
        db.query((sql) => {
          const conditions = [
            filter.actor === undefined ? undefined : sql`actor = ${filter.actor}`,
            filter.target === undefined ? undefined : sql`target = ${filter.target}`,
            filter.since === undefined ? undefined : sql`created_at >= ${filter.since}`,
            filter.until === undefined ? undefined : sql`created_at < ${filter.until}`,
            filter.before === undefined ? undefined : sql`audit_log.id < ${filter.before}::bigint`,
          ].filter((condition) => condition !== undefined)
          const where = conditions.reduce((all, condition) => sql`${all} and ${condition}`, sql`true`)
          const columns = sql`audit_log.id::text as id, actor, channel, action, target, before, after, details,
                             created_at`
          // Ordered by the table's bigint id: a bare `id` here would name the selected text column, and "9" sorts
          // after "17".
          if (filter.action === undefined) {
            return sql<Array<AuditRow>>`
            select ${columns}
            from audit_log where ${where} order by audit_log.id desc limit ${filter.limit}`
          }
          // The few distinct actions are read off `audit_log_action` one index probe each (a loose index scan),
          // those containing the text kept, and each one's newest entries read from its own index range.
          return sql<Array<AuditRow>>`
          with recursive actions (action) as (
            (select action from audit_log order by action limit 1)
            union all
            select (select a.action from audit_log a where a.action > actions.action order by a.action limit 1)
            from actions where actions.action is not null
          )
          select picked.id, actor, channel, picked.action, target, before, after, details, created_at
          from actions
          cross join lateral (
            select ${columns}, audit_log.id as n from audit_log
            where audit_log.action = actions.action and ${where}
            order by audit_log.id desc limit ${filter.limit}
          ) picked
          where actions.action is not null
            and lower(actions.action) like lower(${`%${escapeLike(filter.action)}%`})
          order by picked.n desc limit ${filter.limit}`
        }),
    }
  }),
}) {
  static readonly layer = Layer.effect(AuditReads, AuditReads.make)
}

import { createHash } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { escapeLike, ownersMatching } from "../contract/OwnerMatch.ts"
import { Db } from "../platform/Db.ts"
import type { Role } from "./Domain.ts"

export interface OperatorRow {
  readonly id: string
  readonly email: string
  readonly role: Role
  readonly password_hash: string
  readonly disabled: boolean
  readonly created_at: Date
  readonly last_sign_in_at: Date | null
}

export interface SessionRow {
  readonly id: string
  readonly csrf_token: string
  readonly created_at: Date
  readonly last_seen_at: Date
  readonly revoked_at: Date | null
  readonly operator: OperatorRow
}

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

const OPERATOR_COLUMNS = [
  "id",
  "email",
  "role",
  "password_hash",
  "disabled",
  "created_at",
  "last_sign_in_at",
] as const

/** Only the hash of a session token is stored or looked up. */
export const tokenHash = (token: string) => createHash("sha256").update(token).digest()

export class OperatorRepo extends Context.Service<OperatorRepo>()("partner-service/operator/OperatorRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      insertOperator: (operator: {
        readonly email: string
        readonly role: Role
        readonly passwordHash: string
      }) =>
        db
          .query(
            (sql) => sql<Array<OperatorRow>>`
              insert into operators (email, role, password_hash)
              values (${operator.email}, ${operator.role}, ${operator.passwordHash})
              on conflict (lower(email)) do nothing
              returning ${sql(OPERATOR_COLUMNS)}`,
          )
          .pipe(Effect.map(([row]) => row)),
      operators: db.query(
        (sql) => sql<Array<OperatorRow>>`
          select ${sql(OPERATOR_COLUMNS)} from operators order by lower(email)`,
      ),
      operatorByEmail: (email: string, lock = false) =>
        db
          .query(
            (sql) => sql<Array<OperatorRow>>`
              select ${sql(OPERATOR_COLUMNS)} from operators where lower(email) = lower(${email})
              ${lock ? sql`for update` : sql``}`,
          )
          .pipe(Effect.map(([row]) => row)),
      updateOperator: (id: string, changes: { readonly role: Role; readonly disabled: boolean }) =>
        db
          .query(
            (sql) => sql<Array<OperatorRow>>`
              update operators set role = ${changes.role}, disabled = ${changes.disabled} where id = ${id}
              returning ${sql(OPERATOR_COLUMNS)}`,
          )
          .pipe(Effect.map(([row]) => row!)),
      signedIn: (id: string, at: Date) =>
        db.query((sql) => sql`update operators set last_sign_in_at = ${at} where id = ${id}`),

      insertSession: (operatorId: string, token: string, csrfToken: string, at: Date) =>
        db.query(
          (sql) => sql`
            insert into operator_sessions (operator_id, token_hash, csrf_token, created_at, last_seen_at)
            values (${operatorId}, ${tokenHash(token)}, ${csrfToken}, ${at}, ${at})`,
        ),
      sessionByToken: (token: string) =>
        db
          .query(
            (sql) => sql<Array<Omit<SessionRow, "operator"> & { readonly operator_id: string }>>`
              select id::text, operator_id::text, csrf_token, created_at, last_seen_at, revoked_at
              from operator_sessions where token_hash = ${tokenHash(token)}`,
          )
          .pipe(Effect.map(([row]) => row)),
      sessionById: (id: string) =>
        db
          .query(
            (sql) => sql<Array<Omit<SessionRow, "operator"> & { readonly operator_id: string }>>`
              select id::text, operator_id::text, csrf_token, created_at, last_seen_at, revoked_at
              from operator_sessions where id = ${id}`,
          )
          .pipe(Effect.map(([row]) => row)),
      operatorById: (id: string) =>
        db
          .query(
            (sql) => sql<Array<OperatorRow>>`
              select ${sql(OPERATOR_COLUMNS)} from operators where id = ${id}`,
          )
          .pipe(Effect.map(([row]) => row)),
      touchSession: (id: string, at: Date) =>
        db.query(
          (sql) =>
            sql`update operator_sessions set last_seen_at = greatest(last_seen_at, ${at}) where id = ${id}`,
        ),
      revokeSession: (id: string, at: Date) =>
        db.query(
          (sql) => sql`
            update operator_sessions set revoked_at = ${at} where id = ${id} and revoked_at is null`,
        ),
      /** Ends every open session of the operator (disabled, or role changed). */
      revokeSessionsOf: (operatorId: string, at: Date) =>
        db.query(
          (sql) => sql`
            update operator_sessions set revoked_at = ${at}
            where operator_id = ${operatorId} and revoked_at is null`,
        ),

      /** Failed sign-ins of `email` from `source` since `since`, newest first. */
      recentFailures: (email: string, source: string, since: Date) =>
        db
          .query(
            (sql) => sql<Array<{ failed_at: Date }>>`
              select failed_at from operator_sign_in_failures
              where email = ${email} and source = ${source} and failed_at > ${since} order by failed_at desc`,
          )
          .pipe(Effect.map((rows) => rows.map((row) => row.failed_at))),
      /** How many sign-ins of `email` failed since `since`, from any source. */
      failureCount: (email: string, since: Date) =>
        db
          .query(
            (sql) => sql<Array<{ count: number }>>`
              select count(*)::int as count from operator_sign_in_failures
              where email = ${email} and failed_at > ${since}`,
          )
          .pipe(Effect.map((rows) => rows[0]?.count ?? 0)),
      /** How many sign-ins failed from `source` since `since`, whatever their email, counted up to `atMost`. */
      sourceFailureCount: (source: string, since: Date, atMost: number) =>
        db
          .query(
            (sql) => sql<Array<{ count: number }>>`
              select count(*)::int as count from (
                select 1 from operator_sign_in_failures
                where source = ${source} and failed_at > ${since} limit ${atMost}) as failed`,
          )
          .pipe(Effect.map((rows) => rows[0]?.count ?? 0)),
      /** Records a failure and forgets the email's failures older than `forgetBefore`. */
      recordFailure: (email: string, source: string, at: Date, forgetBefore: Date) =>
        db.query(async (sql) => {
          await sql`delete from operator_sign_in_failures where email = ${email} and failed_at <= ${forgetBefore}`
          await sql`insert into operator_sign_in_failures (email, source, failed_at) values (${email}, ${source}, ${at})`
        }),
      clearFailures: (email: string, source: string) =>
        db.query(
          (sql) => sql`delete from operator_sign_in_failures where email = ${email} and source = ${source}`,
        ),

      auditEntries: (filter: AuditFilter) =>
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

      /** Owners whose slug starts with `text` or whose name contains it (every owner without one), by slug. */
      owners: (text: string | undefined, limit: number) =>
        db.query((sql) =>
          text === undefined
            ? sql<
                Array<{ slug: string; name: string }>
              >`select slug, name from owners order by slug limit ${limit}`
            : // Slugs that start with the text first, then names that hold it.
              sql<Array<{ slug: string; name: string }>>`
                select slug, name from (${ownersMatching(sql, text)}) m
                order by lower(slug) like lower(${`${escapeLike(text)}%`}) desc, slug limit ${limit}`,
        ),
      providers: db.query((sql) => sql<Array<{ name: string }>>`select name from providers order by name`),
    }
  }),
}) {
  static readonly layer = Layer.effect(OperatorRepo, OperatorRepo.make)
}

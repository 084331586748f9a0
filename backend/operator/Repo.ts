import { createHash } from "node:crypto"
import { Context, Effect, Layer } from "effect"
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
    }
  }),
}) {
  static readonly layer = Layer.effect(OperatorRepo, OperatorRepo.make)
}

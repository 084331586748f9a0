import { createHash } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import type { HolderId } from "./Domain.ts"

/** Only the hash of a one-time code or of a cookie's token is stored or looked up. */
export const secretHash = (secret: string) => createHash("sha256").update(secret).digest()

/** Whose sessions a statement touches, by the owner's or the provider's id. */
export type { HolderId }

export interface PortalSessionRow {
  readonly id: string
  readonly owner_id: string | null
  readonly provider_id: string | null
  readonly read_only: boolean
  readonly parent_origin: string | null
  readonly expires_at: Date
}

const COLUMNS = "id::text, owner_id::text, provider_id::text, read_only, parent_origin, expires_at"

export class PortalRepo extends Context.Service<PortalRepo>()("partner-service/portal/PortalRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      insertSession: (
        holder: HolderId,
        session: {
          readonly code: string
          readonly readOnly: boolean
          readonly parentOrigin: string | null
          readonly at: Date
          readonly expiresAt: Date
        },
      ) =>
        db.query(
          (sql) => sql`
            insert into portal_sessions (owner_id, provider_id, read_only, parent_origin, code_hash, created_at,
                                         expires_at)
            values (${"ownerId" in holder ? holder.ownerId : null}, ${"providerId" in holder ? holder.providerId : null},
                    ${session.readOnly}, ${session.parentOrigin}, ${secretHash(session.code)}, ${session.at},
                    ${session.expiresAt})`,
        ),
      /**
       * Consumes a code that is live (not exchanged, not ended, not expired at `at`) and sets the session's token,
       * in one statement, so two requests racing with one code cannot both win.
       */
      exchange: (code: string, token: string, at: Date) =>
        db
          .query(
            (sql) => sql<Array<PortalSessionRow>>`
              update portal_sessions set code_hash = null, token_hash = ${secretHash(token)}, exchanged_at = ${at}
              where code_hash = ${secretHash(code)} and exchanged_at is null and ended_at is null
                and expires_at > ${at}
              returning ${sql.unsafe(COLUMNS)}`,
          )
          .pipe(Effect.map(([row]) => row)),
      /** The session a cookie's token names, when it is neither ended nor expired at `at`. */
      liveSession: (token: string, at: Date) =>
        db
          .query(
            (sql) => sql<Array<PortalSessionRow>>`
              select ${sql.unsafe(COLUMNS)} from portal_sessions
              where token_hash = ${secretHash(token)} and ended_at is null and expires_at > ${at}`,
          )
          .pipe(Effect.map(([row]) => row)),
      /** Whether the session `id` is neither ended nor expired at `at`. */
      sessionLive: (id: string, at: Date) =>
        db
          .query(
            (sql) => sql<Array<{ id: string }>>`
              select id::text from portal_sessions
              where id = ${id}::bigint and ended_at is null and expires_at > ${at}`,
          )
          .pipe(Effect.map((rows) => rows.length > 0)),
      /** Ends every session of the holder not ended yet, exchanged or not. */
      endAll: (holder: HolderId, at: Date) =>
        db.query(
          (sql) => sql`
            update portal_sessions set ended_at = ${at}
            where ended_at is null
              and ${"ownerId" in holder ? sql`owner_id = ${holder.ownerId}::bigint` : sql`provider_id = ${holder.providerId}::bigint`}`,
        ),
    }
  }),
}) {
  static readonly layer = Layer.effect(PortalRepo, PortalRepo.make)
}

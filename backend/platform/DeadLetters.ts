import { Effect } from "effect"
import type { DbShape } from "./Db.ts"
import { pruneOlder } from "./Prune.ts"

/**
 * The dead letters the actors record (`actor/Settling.ts`), as the console reads them and an operator publishes
 * them again. The rows are the platform's: other contexts read and mark them only through these statements.
 */

export interface DeadLetterRow {
  readonly id: string
  readonly actor: string
  readonly stream: string
  readonly stream_seq: string
  readonly subject: string
  readonly reason: string
  readonly delivery_count: number
  readonly created_at: Date
  readonly retries: number
  readonly retried_at: Date | null
}

/** A dead letter with what it carried, to publish again. */
export interface DeadLetterMessage extends DeadLetterRow {
  readonly headers: Record<string, string>
  readonly payload: Buffer
}

export const deadLetterCount = (db: DbShape) =>
  db
    .query((sql) => sql<Array<{ n: number }>>`select count(*)::int as n from dead_letters`)
    .pipe(Effect.map(([row]) => row?.n ?? 0))

/** The newest `limit` dead letters, newest first. */
export const latestDeadLetters = (db: DbShape, limit: number) =>
  db.query(
    (sql) => sql<Array<DeadLetterRow>>`
      select id, actor, stream, stream_seq, subject, reason, delivery_count, created_at, retries, retried_at
      from dead_letters order by id desc limit ${limit}`,
  )

/** The dead letter `id` with its message, locked until the transaction ends; undefined when there is none. */
export const lockDeadLetter = (db: DbShape, id: string) =>
  db
    .query(
      (sql) => sql<Array<DeadLetterMessage>>`
        select id, actor, stream, stream_seq, subject, reason, delivery_count, created_at, retries, retried_at,
               headers, payload
        from dead_letters where id = ${id} for update`,
    )
    .pipe(Effect.map(([row]) => row))

/** Counts one more retry of the dead letter `id`; the row as it is now. */
export const markDeadLetterRetried = (db: DbShape, id: string) =>
  db
    .query(
      (sql) => sql<Array<DeadLetterRow>>`
        update dead_letters set retries = retries + 1, retried_at = now() where id = ${id}
        returning id, actor, stream, stream_seq, subject, reason, delivery_count, created_at, retries, retried_at`,
    )
    .pipe(Effect.map(([row]) => row!))

/** Up to `limit` dead letters recorded before `before`, for the retention sweep. How many went. */
export const pruneDeadLetters = (db: DbShape, before: Date, limit: number) =>
  pruneOlder(db, "dead_letters", "created_at", before, limit)

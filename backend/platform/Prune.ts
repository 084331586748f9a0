import { Effect } from "effect"
import type { DbShape, Sql } from "./Db.ts"

/**
 * The retention sweep's statements, for every context pruning its own tables: each call deletes at most `limit`
 * rows past their time, in one statement (its own transaction), picked through an index on the age and skipping
 * rows another transaction holds, so no lock is held longer than one small batch.
 */

/** Runs `deletion` (a `delete ... returning 1`) and tells how many rows it deleted. */
export const countDeleted = (db: DbShape, deletion: (sql: Sql) => ReturnType<Sql>) =>
  db
    .query(
      (sql) => sql<Array<{ n: number }>>`
      with gone as (${deletion(sql)})
      select count(*)::int as n from gone`,
    )
    .pipe(Effect.map((rows) => rows[0]?.n ?? 0))

/** Up to `limit` rows of `table` whose `column` is before `before`. */
export const pruneOlder = (db: DbShape, table: string, column: string, before: Date, limit: number) =>
  countDeleted(
    db,
    (sql) => sql`
      delete from ${sql(table)} where id in (
        select id from ${sql(table)} where ${sql(column)} < ${before} limit ${limit}
      )
      returning 1`,
  )

/**
 * Up to `limit` items of the jobs `ended` picks; once none are left, up to `limit` of those jobs, so no statement
 * deletes more than a batch however many items a job has. How many rows went.
 */
export const pruneJobs = (
  db: DbShape,
  names: { readonly table: string; readonly items: string; readonly key: string },
  ended: (sql: Sql) => ReturnType<Sql>,
  limit: number,
) =>
  Effect.gen(function* () {
    const items = yield* countDeleted(
      db,
      (sql) => sql`
        delete from ${sql(names.items)} where ctid = any(array(
          select i.ctid from ${sql(names.table)} j join ${sql(names.items)} i on i.${sql(names.key)} = j.id
          where ${ended(sql)}
          limit ${limit}
        ))
        returning 1`,
    )
    if (items === limit) return items
    const jobs = yield* countDeleted(
      db,
      (sql) => sql`
        delete from ${sql(names.table)} where id in (
          select id from ${sql(names.table)} j
          where ${ended(sql)}
            and not exists (select 1 from ${sql(names.items)} i where i.${sql(names.key)} = j.id)
          limit ${limit}
        )
        returning 1`,
    )
    return items + jobs
  })

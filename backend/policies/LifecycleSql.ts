import type { Sql } from "../platform/Db.ts"

/** A timestamp column as Postgres writes it in UTC, to the second (`2026-01-02T03:04:05Z`). */
export const isoText = (sql: Sql, column: string) =>
  sql`to_char(${sql.unsafe(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`

/**
 * Where the lifecycle job reads "today" for each policy: the real date, plus the owner's test clock offset when
 * test clocks are honoured (never in production). `soonest` is the latest date any owner is on, a bound the
 * indexes can use before the per-owner comparison.
 */
export const clockOf = (sql: Sql, today: string, clocks: boolean) => ({
  join: clocks ? sql`left join test_clocks tc on tc.owner_id = p.owner_id` : sql``,
  ownerToday: clocks ? sql`(${today}::date + coalesce(tc.offset_days, 0))` : sql`${today}::date`,
  latest: clocks
    ? sql`(${today}::date + (select coalesce(max(offset_days), 0) from test_clocks))`
    : sql`${today}::date`,
})

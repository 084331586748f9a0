import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"

/** A source that keeps failing for an hour still gets a block Postgres can compute (2^30 s, then capped). */
const MAX_EXPONENT = 30

export class LinkFailuresRepo extends Context.Service<LinkFailuresRepo>()(
  "partner-service/enrollment/LinkFailuresRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        /** Until when `source` is blocked at `now`, if it is. */
        blockedUntil: (source: string, now: Date) =>
          db
            .query(
              (sql) => sql<Array<{ blocked_until: Date }>>`
                select blocked_until from enrollment_link_failures
                where source = ${source} and blocked_until > ${now}`,
            )
            .pipe(Effect.map(([row]) => row?.blocked_until)),
        /**
         * Counts a failure of `source`; past `free` failures in the hour, the n-th blocks it for 2^(n - free - 1)
         * seconds, at most `maxBlockSeconds` (`free` is at least 1, so a first failure never blocks). A quiet hour
         * forgets the count. Answers the block, if any.
         */
        recordFailure: (source: string, now: Date, free: number, maxBlockSeconds: number) =>
          db
            .query(
              (sql) => sql<Array<{ blocked_until: Date | null }>>`
                insert into enrollment_link_failures as f (source, failures, last_failure_at)
                values (${source}, 1, ${now})
                on conflict (source) do update set
                  failures = case when f.last_failure_at < ${now}::timestamptz - interval '1 hour'
                                  then 1 else f.failures + 1 end,
                  last_failure_at = excluded.last_failure_at,
                  blocked_until = case
                    when f.last_failure_at >= ${now}::timestamptz - interval '1 hour'
                         and f.failures + 1 > ${free}
                    then ${now}::timestamptz + make_interval(secs => least(
                      power(2, least(f.failures - ${free}, ${MAX_EXPONENT})), ${maxBlockSeconds}))
                  end
                returning blocked_until`,
            )
            .pipe(Effect.map(([row]) => row?.blocked_until ?? undefined)),
        prune: (now: Date) =>
          db.query(
            (sql) => sql`
              delete from enrollment_link_failures
              where last_failure_at < ${now}::timestamptz - interval '1 hour'
                and (blocked_until is null or blocked_until < ${now})`,
          ),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(LinkFailuresRepo, LinkFailuresRepo.make)
}

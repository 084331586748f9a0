import { hostname } from "node:os"
import { Effect, Layer, Schedule } from "effect"
import { Db, type DbShape } from "./Db.ts"
import { readLoopPasses } from "./Observability.ts"

/** How often a process reports its loops' last passes; the console shows a report this much behind at most. */
export const REPORT_EVERY = "5 seconds"
/** A process's rows not reported again for this long (it was killed) are removed by the next report of any. */
const FORGET_AFTER = "1 hour"

/**
 * In a workers process: its loops' last passes (`loop_last_pass_timestamp_seconds`) copied to `loop_passes`
 * every `REPORT_EVERY`, so the console's system page shows every process's loops; its rows are removed when it
 * stops. A failed report is logged and the next one tries again.
 */
export const loopPassesLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const db = yield* Db
    const process = `${hostname()}/${globalThis.process.pid}`
    const report = Effect.gen(function* () {
      const passes = yield* Effect.promise(readLoopPasses)
      if (passes.length === 0) return
      yield* db.query(
        (sql) => sql`
          with reported as (
            insert into loop_passes (process, loop, passed_at, reported_at)
            select ${process}, l, to_timestamp(t), now()
            from unnest(${passes.map((p) => p.loop)}::text[], ${passes.map((p) => p.passedAt)}::float8[]) as u(l, t)
            on conflict (process, loop) do update set passed_at = excluded.passed_at, reported_at = now()
            returning 1
          )
          delete from loop_passes where reported_at < now() - ${FORGET_AFTER}::interval`,
      )
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.logWarning("loop passes not reported").pipe(Effect.annotateLogs({ cause: String(cause) })),
      ),
    )
    yield* Effect.addFinalizer(() =>
      db
        .query((sql) => sql`delete from loop_passes where process = ${process}`)
        .pipe(
          Effect.timeout("2 seconds"),
          Effect.catchCause(() => Effect.void),
        ),
    )
    yield* Effect.forkScoped(report.pipe(Effect.repeat(Schedule.spaced(REPORT_EVERY))))
  }),
)

/** Every process's loops as last reported, by loop; a process that has not reported for a minute is gone and left out. */
export const reportedLoopPasses = (db: DbShape) =>
  db.query(
    (sql) => sql<Array<{ loop: string; process: string; passed_at: Date }>>`
      select loop, process, passed_at from loop_passes
      where reported_at > now() - interval '1 minute'
      order by loop, process`,
  )

import { Cause, Effect } from "effect"
import { Db, type Sql } from "./Db.ts"

/** How often a process tries to take the partitions no process leads, and checks it still holds its own. */
const LEASE_INTERVAL = "1 second"
/** Key spaces (first key of the two-key advisory locks) of the partition leases and of the processes' presence. */
const ACTOR_LEASE_LOCK = 7_239_300
const ACTOR_PRESENCE_LOCK = 7_239_301

type Reserved = Awaited<ReturnType<Sql["reserve"]>>

/**
 * Which partitions of a batch actor this process leads: a session advisory lock per partition, all held by one
 * reserved connection, so a process that dies (its connection closes) lets another take its partitions within
 * `LEASE_INTERVAL`. Every process running the actor also holds a shared "presence" lock, so each knows how many
 * run it and leads at most its fair share, letting go of the rest between two batches: partitions spread over
 * the processes as they start and stop. A connection that fails (Postgres restarted, the backend killed) has lost
 * its session's locks: the process leads nothing until a renewal reserves a new connection and takes them again.
 * Unlocked when the scope closes, after the work in hand is settled.
 */
export const partitionLeases = (actor: string, partitions: number) =>
  Effect.gen(function* () {
    const db = yield* Db
    const held = new Set<number>()
    const leaving = new Set<number>()
    const all = Array.from({ length: partitions }, (_, i) => i)
    let connection: Reserved | undefined
    let failing = false
    /** Lets go of every lock and of the connection; a connection already gone is simply forgotten. */
    const letGo = () => {
      const reserved = connection
      connection = undefined
      held.clear()
      leaving.clear()
      if (reserved === undefined) return Promise.resolve()
      return reserved
        .unsafe("select pg_advisory_unlock_all()")
        .catch(() => undefined)
        .then(() => reserved.release())
    }
    const renew = Effect.gen(function* () {
      if (connection === undefined) {
        const reserved = yield* db.query<Reserved>((sql) => sql.reserve())
        connection = reserved
        yield* db.query(() =>
          reserved.unsafe("select pg_advisory_lock_shared($1, hashtext($2))", [ACTOR_PRESENCE_LOCK, actor]),
        )
      }
      const session = connection
      const [row] = yield* db.query(() =>
        session.unsafe<Array<{ processes: number }>>(
          `select count(*)::int as processes from pg_locks
           where locktype = 'advisory' and mode = 'ShareLock' and granted
             and database = (select oid from pg_database where datname = current_database())
             and classid = $1::oid and objid = hashtext($2)::oid and objsubid = 2`,
          [ACTOR_PRESENCE_LOCK, actor],
        ),
      )
      const fair = Math.ceil(partitions / Math.max(row!.processes, 1))
      const leading = [...held].filter((p) => !leaving.has(p))
      // Beyond the fair share: let go of the highest partitions (each once its batch in hand is settled).
      for (const p of leading.sort((x, y) => y - x).slice(0, Math.max(0, leading.length - fair)))
        leaving.add(p)
      const room = fair - (held.size - leaving.size)
      if (room > 0) {
        const [taken] = yield* db.query(() =>
          session.unsafe<Array<{ got: Array<number> }>>(
            `select array(select p from unnest($3::int[]) p
                          where pg_try_advisory_lock($1, hashtext($2 || '_p' || p)) limit $4) as got`,
            [ACTOR_LEASE_LOCK, actor, all.filter((p) => !held.has(p)), room],
          ),
        )
        for (const partition of taken!.got) held.add(partition)
      }
      if (failing) {
        failing = false
        yield* Effect.logInfo("actor leases renewed").pipe(Effect.annotateLogs({ actor }))
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.promise(letGo).pipe(
          Effect.andThen(
            failing
              ? Effect.void
              : Effect.logWarning("actor lease check failed; leading no partition until it succeeds").pipe(
                  Effect.annotateLogs({ actor, cause: String(Cause.squash(cause)) }),
                ),
          ),
          Effect.andThen(Effect.sync(() => void (failing = true))),
        ),
      ),
    )
    /** Called by a partition's loop between batches: lets the partition go if it is to be let go. */
    const settle = (partition: number) => {
      const session = connection
      return leaving.has(partition) && session !== undefined
        ? db
            .query(() =>
              session.unsafe("select pg_advisory_unlock($1, hashtext($2 || '_p' || $3::int))", [
                ACTOR_LEASE_LOCK,
                actor,
                partition,
              ]),
            )
            .pipe(
              Effect.exit,
              Effect.andThen(
                Effect.sync(() => {
                  held.delete(partition)
                  leaving.delete(partition)
                }),
              ),
            )
        : Effect.void
    }
    yield* Effect.addFinalizer(() => Effect.promise(letGo))
    yield* renew
    // Uninterruptible: the connection's release must wait for a renewal under way, or a lock that renewal takes
    // after `pg_advisory_unlock_all` would stay held by a pooled connection, and no process would lead the
    // partition again.
    yield* Effect.forkScoped(
      Effect.forever(Effect.sleep(LEASE_INTERVAL).pipe(Effect.andThen(Effect.uninterruptible(renew)))),
    )
    return { leads: (partition: number) => held.has(partition) && !leaving.has(partition), settle }
  })

export type Leases = Effect.Success<ReturnType<typeof partitionLeases>>

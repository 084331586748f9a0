import { Cause, Effect } from "effect"
import type { ActorDefinition } from "./ActorDefinition.ts"
import { Db, type Sql } from "./Db.ts"
import { type FollowedMessage, Nats } from "./Nats.ts"
import { metrics } from "./Observability.ts"

/** How often the leading process records the consumers' ack floors, and how often the others try to lead. */
const CHECKPOINT_INTERVAL = "1 second"
/** Key space (first key of the two-key advisory locks) of the checkpoint leads, one per actor and stream. */
const CHECKPOINT_LOCK = 7_239_302
/** Messages read back from the stream at once. */
const READ_CHUNK = 500
/** The longest one statement on the lead's connection, or one read of the stream, may take. */
const STEP_TIMEOUT = "20 seconds"

type Reserved = Awaited<ReturnType<Sql["reserve"]>>

/** One durable consumer of an actor: its name and its subject filter (prefixed). */
interface Checkpointed {
  readonly consumer: string
  readonly filter: string
}

/**
 * Checkpoints of an actor's durable consumers, for a Postgres that may lose its last commits (a failover to an
 * asynchronous standby): a handler commits, then acks, so a message can be acknowledged in JetStream while the
 * commit it made is gone, and JetStream never hands it out again.
 *
 * One process at a time leads (a session advisory lock on a reserved connection). Every `CHECKPOINT_INTERVAL` it
 * reads each consumer's ack floor from JetStream and writes it, on that same connection and only while the lock
 * is still held there, to `consumer_checkpoints`. Every message at or below a floor was acknowledged, so its
 * commit was acknowledged by Postgres, before the checkpoint's transaction began: it is earlier in the WAL, and a
 * standby that has the checkpoint has the commit. Messages of a consumer above its checkpoint are the only ones
 * whose commits may be lost.
 *
 * When a process takes the lead (at start, after the leader died, and after any failure of the lead's
 * connection: a restarted or failed-over Postgres holds no lock), it first reads each consumer's messages from
 * its checkpoint to the last one delivered back from the stream and hands them to `redo`, which must be
 * idempotent (messages in hand elsewhere are redone too), then records the ack floors it read before. Until then
 * no checkpoint moves, so a failover's lost commits are always above the checkpoint that survived it.
 */
export const consumerCheckpoints = <R>(options: {
  /** The actor's name, for the lock, logs and metrics. */
  readonly name: string
  /** The stream's actual name. */
  readonly stream: string
  readonly consumers: ReadonlyArray<Checkpointed>
  /** Handles the messages again; how many records it made (those that were missing). */
  readonly redo: (messages: ReadonlyArray<FollowedMessage>) => Effect.Effect<number, never, R>
}) =>
  Effect.gen(function* () {
    const db = yield* Db
    const nats = yield* Nats
    const { name, stream, consumers, redo } = options
    const lockKey = `${stream}/${name}`
    let connection: Reserved | undefined
    let failing = false

    const letGo = () => {
      const reserved = connection
      connection = undefined
      if (reserved === undefined) return Promise.resolve()
      return reserved
        .unsafe("select pg_advisory_unlock($1, hashtext($2))", [CHECKPOINT_LOCK, lockKey])
        .catch(() => undefined)
        .then(() => reserved.release())
    }
    const onLead = <A>(session: Reserved, text: string, params: ReadonlyArray<unknown>) =>
      db
        .query(() => session.unsafe<Array<A>>(text, params as Array<never>))
        .pipe(
          Effect.timeoutOrElse({ duration: STEP_TIMEOUT, orElse: () => Effect.die(new Error(`timed out`)) }),
        )

    /** Each consumer's progress in JetStream now; consumers not made yet are left out. */
    const progress = Effect.forEach(consumers, (c) =>
      nats.consumerProgress(stream, c.consumer).pipe(Effect.map((p) => ({ ...c, progress: p }))),
    ).pipe(
      Effect.map((all) => all.flatMap((c) => (c.progress === undefined ? [] : [{ ...c, ...c.progress }]))),
    )

    /** Writes the floors, only while this session holds the lead; fails when it no longer does. */
    const record = (session: Reserved, floors: ReadonlyArray<{ consumer: string; ackFloor: number }>) =>
      Effect.gen(function* () {
        if (floors.length === 0) return
        const rows = yield* onLead<{ consumer: string }>(
          session,
          `insert into consumer_checkpoints (stream, consumer, stream_seq, updated_at)
           select $1, c, s, now() from unnest($2::text[], $3::bigint[]) as t(c, s)
           where exists (select 1 from pg_locks
                         where locktype = 'advisory' and granted and pid = pg_backend_pid()
                           and classid = $4::oid and objid = hashtext($5)::oid and objsubid = 2)
           on conflict (stream, consumer) do update
             set stream_seq = excluded.stream_seq, updated_at = excluded.updated_at
           returning consumer`,
          [stream, floors.map((f) => f.consumer), floors.map((f) => f.ackFloor), CHECKPOINT_LOCK, lockKey],
        )
        if (rows.length === 0) return yield* Effect.die(new Error("the checkpoint lead was lost"))
      })

    /** From each consumer's checkpoint to its last delivered message: read back and redone. */
    const catchUp = (session: Reserved) =>
      Effect.gen(function* () {
        const now = yield* progress
        const stored = yield* onLead<{ consumer: string; stream_seq: string }>(
          session,
          "select consumer, stream_seq::text from consumer_checkpoints where stream = $1 and consumer = any($2::text[])",
          [stream, now.map((c) => c.consumer)],
        )
        const from = new Map(stored.map((row) => [row.consumer, Number(row.stream_seq) + 1]))
        const ranges: Array<string> = []
        let messages = 0
        let made = 0
        for (const c of now) {
          // No checkpoint yet (the first run): nothing was lost before it.
          const start = from.get(c.consumer)
          if (start === undefined || start > c.delivered) continue
          let next = start
          ranges.push(`${c.consumer} ${next}-${c.delivered}`)
          while (next <= c.delivered) {
            const read: ReadonlyArray<FollowedMessage> = yield* nats
              .readRange(stream, c.filter, next, c.delivered, READ_CHUNK)
              .pipe(
                Effect.timeoutOrElse({
                  duration: STEP_TIMEOUT,
                  orElse: () => Effect.die(new Error("reading the stream back timed out")),
                }),
              )
            if (read.length === 0) break
            made += yield* redo(read)
            messages += read.length
            metrics.actorReread.inc({ actor: name }, read.length)
            next = read.at(-1)!.seq + 1
          }
        }
        if (messages > 0 || ranges.length > 0)
          yield* Effect.logInfo("actor messages past their checkpoint read back and handled again").pipe(
            Effect.annotateLogs({ actor: name, ranges: ranges.join(", "), messages, made }),
          )
        yield* record(session, now)
      })

    const pass = Effect.gen(function* () {
      if (connection === undefined) {
        const reserved = yield* db.query<Reserved>((sql) => sql.reserve())
        connection = reserved
        const [row] = yield* onLead<{ got: boolean }>(
          reserved,
          "select pg_try_advisory_lock($1, hashtext($2)) as got",
          [CHECKPOINT_LOCK, lockKey],
        )
        if (row?.got !== true) {
          connection = undefined
          reserved.release()
          return
        }
        yield* catchUp(reserved)
      } else {
        const session = connection
        yield* record(session, yield* progress)
      }
      if (failing) {
        failing = false
        yield* Effect.logInfo("actor checkpoints recorded again").pipe(Effect.annotateLogs({ actor: name }))
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.promise(letGo).pipe(
          Effect.andThen(
            failing
              ? Effect.void
              : Effect.logWarning("actor checkpoint failed; taking the lead again, from the checkpoint").pipe(
                  Effect.annotateLogs({ actor: name, cause: String(Cause.squash(cause)) }),
                ),
          ),
          Effect.andThen(Effect.sync(() => void (failing = true))),
        ),
      ),
    )

    yield* Effect.addFinalizer(() => Effect.promise(letGo))
    // Uninterruptible, as the partition leases: the connection's release waits for a pass under way.
    yield* Effect.forkScoped(
      Effect.forever(Effect.uninterruptible(pass).pipe(Effect.andThen(Effect.sleep(CHECKPOINT_INTERVAL)))),
    )
  })

/**
 * `consumerCheckpoints` over the durable consumers `runActor` makes for `actor` (`<name>_p<partition>`, each
 * filtered to its partition).
 */
export const actorCheckpoints = <A, R, R2>(
  actor: ActorDefinition<A, R>,
  redo: (messages: ReadonlyArray<FollowedMessage>) => Effect.Effect<number, never, R2>,
) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const partitions = Math.max(actor.partitions, 1)
    yield* consumerCheckpoints({
      name: actor.name,
      stream: nats.streamName(actor.stream),
      consumers: Array.from({ length: partitions }, (_, p) => ({
        consumer: `${actor.name}_p${p}`,
        filter: nats.subject(actor.partitions === 0 ? actor.subject : `${actor.subject}.${p}`),
      })),
      redo,
    })
  })

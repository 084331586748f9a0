import { readdir, readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { Context, Effect, Exit, Layer, Redacted, type Scope } from "effect"
import postgres from "postgres"
import { AppConfig } from "./Config.ts"
import { databaseUrl, withDatabase } from "./DatabaseUrl.ts"
import { databaseFailure, DependencyUnavailable } from "./Unavailable.ts"

/** The tagged-template client handed to repositories; inside `Db.transaction` it is the transaction's. */
export type Sql = postgres.Sql
export type Row = postgres.Row

/** `text` with LIKE's wildcards and escape character escaped, for a pattern with `\` as its escape. */
export const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** `text` as a LIKE pattern matching it anywhere, its wildcards and escape character taken literally. */
export const containing = (text: string) => `%${escapeLike(text)}%`

const migrationsDir = fileURLToPath(new URL("../migrations/", import.meta.url))

/** Key of the advisory lock that serializes migration runs across processes (any constant works). */
const MIGRATION_LOCK = 7_239_001

const CurrentTransaction = Context.Reference<Sql | undefined>(
  "partner-service/platform/Db/CurrentTransaction",
  {
    defaultValue: () => undefined,
  },
)

type Reserved = Awaited<ReturnType<Sql["reserve"]>>

/** Waits for a connection of the pool's own; one handed over after the wait was interrupted goes straight back. */
const reserve = (sql: Sql) =>
  Effect.callback<Reserved>((resume) => {
    let wanted = true
    sql.reserve().then(
      (tx) => (wanted ? resume(Effect.succeed(tx)) : tx.release()),
      (error: unknown) => resume(Effect.die(databaseFailure(error))),
    )
    return Effect.sync(() => {
      wanted = false
    })
  })

/** A call to the driver; its failure is a defect, `DependencyUnavailable` when Postgres is not answering. */
const call = <A>(run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: databaseFailure }).pipe(Effect.orDie)

/** While Postgres is down, how often a call goes through to find out whether it is back. */
const PROBE_EVERY_MS = 500

/**
 * While Postgres is known not to answer, calls fail at once with `DependencyUnavailable` (a 503 the client may
 * retry) rather than queue on a pool whose connections are all waiting to reconnect, which would hold requests
 * for as long as the outage lasts. One call in every `PROBE_EVERY_MS` goes through to find out whether it is back.
 */
const outageGate = () => {
  let down: DependencyUnavailable | undefined
  let lastTry = 0
  const observe = <A>(effect: Effect.Effect<A>) =>
    effect.pipe(
      Effect.tap(() => Effect.sync(() => void (down = undefined))),
      Effect.tapDefect((defect) =>
        Effect.sync(() => {
          if (defect instanceof DependencyUnavailable) down = defect
        }),
      ),
    )
  const gated = <A>(effect: Effect.Effect<A>) =>
    Effect.suspend(() => {
      if (down !== undefined) {
        const now = performance.now()
        if (now - lastTry < PROBE_EVERY_MS) return Effect.die(down)
        lastTry = now
      }
      return observe(effect)
    })
  return { gated, observe }
}

/**
 * Runs `effect`'s queries on the pool even inside a transaction: for a value read on behalf of others (a cache's),
 * which must not see one caller's uncommitted writes nor queue on the connection that caller holds.
 */
export const outsideTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, CurrentTransaction, undefined)

export interface DbShape {
  /**
   * Runs a query on the current transaction, or the pool outside one. Database failures are defects
   * (`DependencyUnavailable` when the server is not answering).
   */
  readonly query: <A>(run: (sql: Sql) => Promise<A>) => Effect.Effect<A>
  /** Runs `effect` in one transaction: committed when it succeeds, rolled back when it fails. Nests. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Runs `effect`'s reads in one read-only snapshot (REPEATABLE READ): several statements that together show one
   * row see it as of one moment, never half before and half after another transaction's commit. Inside a
   * transaction already, it is that transaction.
   */
  readonly snapshot: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * LISTEN on a channel for as long as the scope is open, on a connection of its own. `onListen` runs each time
   * the listening connection (re)connects: notifications may have been missed.
   */
  readonly listen: (
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
  ) => Effect.Effect<void, never, Scope.Scope>
  readonly migrate: Effect.Effect<ReadonlyArray<string>>
  readonly ping: Effect.Effect<void>
}

/** The type ids of `timestamp` and `timestamptz`. */
const TIMESTAMP_TYPES = [1114, 1184]

/**
 * A timestamp as Postgres writes it (`0075-06-01 00:00:00+00`). The driver reads that text with `new Date`, which
 * takes a year from 0001 to 0099 written so as 1901 to 2099; in ISO form (`T`, a `+00:00` offset) it is the year
 * written.
 */
const readTimestamp = (text: string) =>
  new Date(text.startsWith("00") ? text.replace(" ", "T").replace(/([+-]\d{2})$/, "$1:00") : text)

/** A pool as the service makes it (its size, timeouts and reconnect backoff), `options` overriding. */
export const connect = (url: string, options: postgres.Options<Record<string, never>> = {}) => {
  const sql = postgres(url, {
    // Actors hold one connection per partition in flight (16 each), besides the gateways and the relay.
    max: 24,
    idle_timeout: 30,
    connect_timeout: 10,
    // Seconds before a connection that failed tries again. The driver's default grows to 20 s over an outage,
    // so the pool would stay away long after Postgres is back; capped at one second, it returns within that.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    onnotice: () => undefined,
    connection: { application_name: "partner-service" },
    ...options,
  })
  // The connections read the parsers from this object when a row arrives (arrays of them included).
  for (const type of TIMESTAMP_TYPES) sql.options.parsers[type] = readTimestamp
  return sql
}

/** Creates the configured database when the server does not have it yet (start-up of a fresh machine). */
export const ensureDatabase = (url: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const target = databaseUrl(url)
      return { name: target.database, admin: connect(withDatabase(target, "postgres"), { max: 1 }) }
    }),
    ({ name, admin }) =>
      Effect.promise(async () => {
        const [found] = await admin`select 1 from pg_database where datname = ${name}`
        if (found) return false
        await admin`create database ${admin(name)}`.catch((error: postgres.PostgresError) => {
          // Another process created it between the check and the create.
          if (error.code !== "42P04" && error.code !== "23505") throw error
        })
        return true
      }),
    ({ admin }) => Effect.promise(() => admin.end({ timeout: 5 })),
  )

const runMigrations = (sql: Sql) =>
  Effect.promise(async () => {
    const files = (await readdir(migrationsDir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort()
    const contents = await Promise.all(files.map((f) => readFile(`${migrationsDir}${f}`, "utf8")))
    return sql.begin(async (tx) => {
      // Two processes starting at once: the second waits here, then finds nothing left to apply.
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await tx`create table if not exists schema_migrations (
        version text primary key, applied_at timestamptz not null default now())`
      const done = new Set((await tx`select version from schema_migrations`).map((r) => r.version as string))
      const applied: Array<string> = []
      for (const [i, file] of files.entries()) {
        if (done.has(file)) continue
        await tx.unsafe(contents[i] ?? "")
        await tx`insert into schema_migrations (version) values (${file})`
        applied.push(file)
      }
      return applied
    })
  })

export class Db extends Context.Service<Db, DbShape>()("partner-service/platform/Db") {
  static readonly layer = Layer.effect(
    Db,
    Effect.gen(function* () {
      const url = Redacted.value((yield* AppConfig).databaseUrl)
      const sql = yield* Effect.acquireRelease(
        Effect.sync(() => connect(url)),
        (pool) => Effect.promise(() => pool.end({ timeout: 5 })),
      )

      const gate = outageGate()
      const query = <A>(run: (sql: Sql) => Promise<A>) =>
        Effect.flatMap(Effect.service(CurrentTransaction), (tx) =>
          tx ? call(() => run(tx)) : gate.gated(call(() => run(sql))),
        )

      /**
       * BEGIN on a connection reserved for the transaction, the effect in the caller's own fiber with that connection
       * as `CurrentTransaction`, then COMMIT or ROLLBACK by its exit. Only the effect is interruptible: an interrupted
       * transaction rolls back and its connection goes back to the pool. A connection that fails COMMIT or ROLLBACK
       * is a defect, as any database failure.
       */
      const inTransaction =
        (begin: (tx: Sql) => Promise<unknown>) =>
        <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
          Effect.flatMap(Effect.service(CurrentTransaction), (current) =>
            current
              ? effect
              : Effect.uninterruptibleMask((restore) =>
                  Effect.acquireUseRelease(
                    restore(gate.gated(reserve(sql))),
                    (tx) =>
                      gate.observe(call(() => begin(tx as Sql))).pipe(
                        Effect.andThen(
                          restore(effect).pipe(Effect.provideService(CurrentTransaction, tx as Sql)),
                        ),
                        Effect.onExit((exit) =>
                          call(() => (Exit.isSuccess(exit) ? tx`commit` : tx`rollback`)),
                        ),
                      ),
                    (tx) => Effect.sync(() => tx.release()),
                  ),
                ),
          )

      const transaction = inTransaction((tx) => tx`begin`)
      const readOnly = inTransaction((tx) => tx`begin isolation level repeatable read read only`)
      // Inside a snapshot the transaction is read-only by our own BEGIN: a write refused there (25006) is a bug in
      // the caller, not a server found read-only.
      const snapshot = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        readOnly(effect).pipe(
          Effect.catchDefect((defect) =>
            Effect.die(
              defect instanceof DependencyUnavailable && defect.reason.startsWith("25006")
                ? new Error(`a write inside a read-only snapshot: ${defect.reason}`)
                : defect,
            ),
          ),
        )

      const listen = (channel: string, onNotify: (payload: string) => void, onListen?: () => void) =>
        Effect.acquireRelease(
          call(() => sql.listen(channel, onNotify, onListen)),
          // A connection already gone cannot unlisten; that must not turn a clean shutdown into a crash.
          (subscription) => Effect.tryPromise(() => subscription.unlisten()).pipe(Effect.ignore),
        ).pipe(Effect.asVoid)

      return Db.of({
        query,
        transaction,
        snapshot,
        listen,
        migrate: runMigrations(sql),
        // Always sent: readiness and paused actors ask whether Postgres is back.
        ping: gate.observe(call(() => sql`select 1`)).pipe(Effect.asVoid),
      })
    }),
  )
}

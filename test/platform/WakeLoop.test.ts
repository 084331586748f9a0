import { randomBytes } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { type Cause, Clock, Context, Deferred, Effect, Exit, Layer, Scope } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Db } from "../../backend/platform/Db.ts"
import { readLoopPasses } from "../../backend/platform/Observability.ts"
import { unavailableIn } from "../../backend/platform/Unavailable.ts"
import { wakeLoop } from "../../backend/platform/WakeLoop.ts"
import { freePort } from "../support/Net.ts"
import { eventually } from "../support/Streams.ts"
import { isolatedEnv, testPlatform } from "../support/TestPlatform.ts"

/** A channel and a table of jobs of the test's own; `announce` commits a job with its NOTIFY. */
const jobs = Effect.gen(function* () {
  const db = yield* Db
  const name = `wake_${randomBytes(4).toString("hex")}`
  yield* db.query(
    (sql) => sql`create table ${sql(name)} (id int primary key, done boolean not null default false)`,
  )
  return {
    channel: name,
    /** Marks every waiting job done: what a pass drains. */
    drain: db.query((sql) => sql`update ${sql(name)} set done = true where not done`).pipe(Effect.asVoid),
    announce: (id: number) =>
      db.transaction(
        db
          .query((sql) => sql`insert into ${sql(name)} (id) values (${id})`)
          .pipe(Effect.andThen(db.query((sql) => sql`select pg_notify(${name}, '')`))),
      ),
    isDone: (id: number) =>
      db
        .query((sql) => sql<Array<{ done: boolean }>>`select done from ${sql(name)} where id = ${id}`)
        .pipe(Effect.map(([row]) => row?.done === true)),
  }
})

/** Failures of passes that should not fail, asserted empty at the end. */
const failures = () => {
  const causes: Array<Cause.Cause<unknown>> = []
  return { causes, onFailure: (cause: Cause.Cause<unknown>) => Effect.sync(() => void causes.push(cause)) }
}

/** Waits until `count()` reaches `least`; what it then is. */
const reaches = (count: () => number, least: number) => eventually(Effect.sync(count), (n) => n >= least)

describe("wakeLoop", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect("drains the work each NOTIFY announces, with no poll to fall back on", () =>
      Effect.gen(function* () {
        const { channel, drain, announce, isDone } = yield* jobs
        const { causes, onFailure } = failures()
        yield* wakeLoop({ channel, poll: "1 hour", drain, onFailure })
        // The pass at start and the one after the listener connected can drain the first two jobs at most;
        // each job is announced after the one before it was drained, so the third needs its notification.
        for (const id of [1, 2, 3]) {
          yield* announce(id)
          yield* eventually(isDone(id), (done) => done)
        }
        assert.deepStrictEqual(causes, [])
      }),
    )

    it.effect(
      "passes again when a pass says when the next is due, and when a caller names an earlier time",
      () =>
        Effect.gen(function* () {
          const { channel } = yield* jobs
          const { causes, onFailure } = failures()
          let passes = 0
          let dueSoon = true
          const loop = yield* wakeLoop({
            channel,
            poll: "1 hour",
            drain: Effect.gen(function* () {
              passes += 1
              return dueSoon ? new Date((yield* Clock.currentTimeMillis) + 10) : undefined
            }),
            onFailure,
          })
          // Two passes come from the start and the listener; a third only from the due time.
          yield* reaches(() => passes, 3)
          dueSoon = false
          const settled = yield* reaches(() => passes, 4)
          // From here on the loop plans its next pass an hour away; only `wakeBy` brings one sooner.
          yield* eventually(
            Effect.flatMap(Clock.currentTimeMillis, (now) => loop.wakeBy(now)).pipe(Effect.map(() => passes)),
            (n) => n >= settled + 2,
          )
          assert.deepStrictEqual(causes, [])
        }),
    )

    it.effect(
      "hands a pass that found Postgres unavailable to onFailure and passes again, until one succeeds",
      () =>
        Effect.gen(function* () {
          const { channel, drain, announce, isDone } = yield* jobs
          const closedPort = yield* Effect.promise(freePort)
          const unreachable = Context.get(
            yield* Layer.build(
              Layer.fresh(Db.layer).pipe(
                Layer.provide(
                  AppConfig.layerFrom(
                    isolatedEnv({ DATABASE_URL: `postgres://postgres@127.0.0.1:${closedPort}/absent` }),
                  ),
                ),
              ),
            ),
            Db,
          )
          let down = true
          const failed: Array<string> = []
          yield* wakeLoop({
            channel,
            poll: "20 millis",
            drain: Effect.suspend(() => (down ? unreachable.query((sql) => sql`select 1`) : drain)),
            onFailure: (cause) =>
              Effect.sync(() => void failed.push(unavailableIn(cause)?.dependency ?? "a defect")),
          })
          yield* reaches(() => failed.length, 3)
          assert.deepStrictEqual(new Set(failed), new Set(["postgres"]))
          down = false
          yield* announce(1)
          yield* eventually(isDone(1), (done) => done)
        }),
    )

    it.effect("reports its last pass while it runs, and no longer once its scope has ended", () =>
      Effect.gen(function* () {
        const { channel, drain } = yield* jobs
        const loop = `wake_test_${randomBytes(4).toString("hex")}`
        const reported = Effect.map(
          Effect.promise(readLoopPasses),
          (passes) => passes.find((pass) => pass.loop === loop) !== undefined,
        )
        const scope = yield* Scope.make()
        yield* wakeLoop({
          channel,
          poll: "1 hour",
          liveness: loop,
          drain,
          onFailure: () => Effect.void,
        }).pipe(Scope.provide(scope))
        yield* eventually(reported, (shown) => shown)
        yield* Scope.close(scope, Exit.void)
        assert.isFalse(yield* reported)
      }),
    )

    it.effect("ends with its scope, interrupting the pass in flight", () =>
      Effect.gen(function* () {
        const { channel } = yield* jobs
        const started = yield* Deferred.make<void>()
        let interrupted = false
        const scope = yield* Scope.make()
        yield* wakeLoop({
          channel,
          poll: "1 hour",
          drain: Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true))),
          ),
          onFailure: () => Effect.void,
        }).pipe(Scope.provide(scope))
        yield* Deferred.await(started)
        yield* Scope.close(scope, Exit.void)
        assert.isTrue(interrupted)
      }),
    )

    it.effect(
      "abandons a pass that never answers after its time limit, counts it as failed and goes on with the next",
      () =>
        Effect.gen(function* () {
          const channel = `wake_${randomBytes(4).toString("hex")}`
          const { causes, onFailure } = failures()
          let passes = 0
          // The first pass waits forever, as a query on a socket that died without a close does; the rest answer.
          const drain = Effect.suspend(() => (++passes === 1 ? Effect.never : Effect.void))
          yield* wakeLoop({ channel, poll: "20 millis", passTimeout: "200 millis", drain, onFailure })
          yield* reaches(() => passes, 3)
          yield* reaches(() => causes.length, 1)
          assert.match(String(causes[0]), /PassTimedOut: pass took longer than 200 ms; abandoned/)
        }),
    )
  })
})

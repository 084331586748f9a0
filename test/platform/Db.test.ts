import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Result } from "effect"
import { Db } from "../../backend/platform/Db.ts"
import { testPlatform } from "../support/TestPlatform.ts"

const notes = Effect.gen(function* () {
  const db = yield* Db
  const rows = yield* db.query((sql) => sql<Array<{ note: string }>>`select note from ledger order by note`)
  return rows.map((row) => row.note)
})

const write = (note: string) =>
  Effect.gen(function* () {
    const db = yield* Db
    yield* db.query((sql) => sql`insert into ledger (note) values (${note})`)
  })

describe("Db.transaction", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect("commits the work of an effect that succeeds", () =>
      Effect.gen(function* () {
        const db = yield* Db
        yield* db.query((sql) => sql`create table ledger (note text primary key)`)
        const result = yield* db.transaction(write("committed").pipe(Effect.as("done")))
        assert.strictEqual(result, "done")
        assert.include(yield* notes, "committed")
      }),
    )

    it.effect("rolls back the work of an effect that fails, and returns its failure", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const error = yield* db
          .transaction(write("failed").pipe(Effect.andThen(Effect.fail("rejected" as const))))
          .pipe(Effect.flip)
        assert.strictEqual(error, "rejected")
        assert.notInclude(yield* notes, "failed")
      }),
    )

    it.effect("rolls back the work of an effect that dies, and dies with its defect", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const boom = new Error("boom")
        const exit = yield* db
          .transaction(write("died").pipe(Effect.andThen(Effect.die(boom))))
          .pipe(Effect.exit)
        assert.deepStrictEqual(Exit.findDefect(exit), Result.succeed(boom))
        assert.notInclude(yield* notes, "died")
      }),
    )

    it.effect("rolls back an inner transaction's work when the outer one fails", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const seenInside = yield* db
          .transaction(
            Effect.gen(function* () {
              yield* db.transaction(write("inner"))
              yield* write("outer")
              return yield* Effect.fail(yield* notes)
            }),
          )
          .pipe(Effect.flip)
        assert.includeMembers(seenInside, ["inner", "outer"])
        const after = yield* notes
        assert.notInclude(after, "inner")
        assert.notInclude(after, "outer")
      }),
    )

    it.effect("runs the effect in the caller's own fiber", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const outside = yield* Effect.fiberId
        assert.strictEqual(
          yield* db.transaction(write("fiber").pipe(Effect.andThen(Effect.fiberId))),
          outside,
        )
      }),
    )

    it.effect("rolls back when interrupted mid-way, and gives its connection and locks back", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const wrote = yield* Deferred.make<void>()
        const fiber = yield* db
          .transaction(
            write("interrupted").pipe(
              Effect.andThen(Deferred.succeed(wrote, undefined)),
              Effect.andThen(Effect.never),
            ),
          )
          .pipe(Effect.forkChild)
        yield* Deferred.await(wrote)
        yield* Fiber.interrupt(fiber)
        assert.notInclude(yield* notes, "interrupted")
        // A transaction still open would hold the key's lock and block this insert of the same key.
        yield* db.transaction(write("interrupted"))
        assert.include(yield* notes, "interrupted")
      }),
    )

    it.effect(
      "snapshot: every read sees the rows as of one moment, though another transaction commits between them",
      () =>
        Effect.gen(function* () {
          const db = yield* Db
          yield* write("before")
          // Forked outside the snapshot, so it writes on a connection of its own once told to.
          const go = yield* Deferred.make<void>()
          const writer = yield* Deferred.await(go).pipe(Effect.andThen(write("between")), Effect.forkChild)
          const seen = yield* db.snapshot(
            Effect.gen(function* () {
              const first = yield* notes
              yield* Deferred.succeed(go, undefined)
              yield* Fiber.join(writer)
              return { first, second: yield* notes }
            }),
          )
          assert.include(seen.first, "before")
          assert.deepStrictEqual(seen.second, seen.first)
          assert.include(yield* notes, "between")
        }),
    )

    it.effect("snapshot: a write inside it is refused (read only) and changes nothing", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const exit = yield* db.snapshot(write("snapshot-write")).pipe(Effect.exit)
        assert.isTrue(Exit.hasDies(exit))
        assert.include(String(Exit.findDefect(exit).pipe(Result.getOrElse(() => ""))), "read-only")
        assert.notInclude(yield* notes, "snapshot-write")
      }),
    )

    it.effect(
      "reads a timestamp of any year from 0001 to 9999 as the instant stored, alone or in an array",
      () =>
        Effect.gen(function* () {
          const db = yield* Db
          const stored = [
            "0001-01-01T00:00:00.000Z",
            "0075-06-01T04:30:00.000Z",
            "0099-12-31T23:59:59.999Z",
            "0100-01-01T00:00:00.000Z",
            "2026-11-27T12:00:00.123Z",
            "9999-12-31T23:59:59.999Z",
          ]
          const [row] = yield* db.query(
            (sql) => sql<Array<{ zoned: ReadonlyArray<Date>; plain: Date; offset: Date }>>`
            select array(select unnest(${stored}::timestamptz[])) as zoned,
                   '0050-03-04 05:06:07'::timestamp as plain,
                   '0075-06-01 10:00:00+05:30'::timestamptz as offset`,
          )
          assert.deepStrictEqual(
            row!.zoned.map((at) => at.toISOString()),
            stored,
          )
          assert.strictEqual(row!.offset.toISOString(), "0075-06-01T04:30:00.000Z")
          assert.strictEqual(row!.plain.getFullYear(), 50)
        }),
    )
  })
})

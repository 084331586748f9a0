import { readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Db, ensureDatabase } from "../../backend/platform/Db.ts"
import { dropIsolated, isolatedEnv } from "../support/TestPlatform.ts"

const migrationFiles = readdirSync(fileURLToPath(new URL("../../backend/migrations/", import.meta.url)))
  .filter((file) => /^\d{4}_.+\.sql$/.test(file))
  .sort()

/** An empty database of the test's own, dropped when the test ends: migrations start from nothing. */
const freshDatabase = Effect.acquireRelease(
  Effect.sync(() => isolatedEnv()).pipe(Effect.tap((env) => ensureDatabase(env.DATABASE_URL!))),
  (env) => Effect.promise(() => dropIsolated(env)),
)

/** A Db with a pool of its own, as each process of a deployment has. */
const connectDb = (env: Record<string, string>) =>
  Layer.build(Db.layer.pipe(Layer.provide(AppConfig.layerFrom(env)))).pipe(Effect.map(Context.get(Db)))

const appliedVersions = (db: Db["Service"]) =>
  db.query((sql) => sql<Array<{ version: string }>>`select version from schema_migrations order by version`)

const tableNames = (db: Db["Service"]) =>
  db.query(
    (sql) => sql<Array<{ table_name: string }>>`
      select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
  )

describe("migrate", () => {
  it.live("applies each migration file once when run twice", () =>
    Effect.gen(function* () {
      const db = yield* connectDb(yield* freshDatabase)
      assert.deepStrictEqual(yield* db.migrate, migrationFiles)
      assert.deepStrictEqual(yield* db.migrate, [])
      assert.deepStrictEqual(
        (yield* appliedVersions(db)).map((row) => row.version),
        migrationFiles,
      )
    }),
  )

  it.live("applies every file exactly once when two processes migrate at the same time", () =>
    Effect.gen(function* () {
      const env = yield* freshDatabase
      const first = yield* connectDb(env)
      const second = yield* connectDb(env)
      const [a, b] = yield* Effect.all([first.migrate, second.migrate], { concurrency: "unbounded" })
      assert.deepStrictEqual([...a, ...b].sort(), migrationFiles)
      // The later one waits for the earlier one's run to commit, then finds nothing left to apply.
      assert.sameMembers([a.length, b.length], [migrationFiles.length, 0])
      assert.deepStrictEqual(
        (yield* appliedVersions(first)).map((row) => row.version),
        migrationFiles,
      )
    }),
  )

  it.live("creates the outbox with its 16 partitions and the dead letters table", () =>
    Effect.gen(function* () {
      const db = yield* connectDb(yield* freshDatabase)
      yield* db.migrate
      const tables = (yield* tableNames(db)).map((row) => row.table_name)
      for (const table of ["outbox", "outbox_partitions", "dead_letters", "schema_migrations"]) {
        assert.include(tables, table)
      }
      const partitions = yield* db.query(
        (sql) =>
          sql<Array<{ partition: number }>>`select partition from outbox_partitions order by partition`,
      )
      assert.deepStrictEqual(
        partitions.map((row) => row.partition),
        Array.from({ length: 16 }, (_, i) => i),
      )
    }),
  )
})

import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Db } from "../../backend/platform/Db.ts"
import { databaseUrl, withDatabase } from "../../backend/platform/DatabaseUrl.ts"
import { baseDatabaseUrl, isolatedEnv } from "./TestPlatform.ts"
import { adminConnection, templateDatabase } from "./TemplateDatabase.ts"

/**
 * Vitest's global set-up: makes the migrated template database when the server does not have it yet (migrated
 * under another name, then renamed, so no test copies a half-migrated one), and drops the templates of earlier
 * migration sets.
 */
export default async function setup() {
  const sql = adminConnection(baseDatabaseUrl)
  try {
    const [found] = await sql`select 1 from pg_database where datname = ${templateDatabase}`
    if (!found) {
      const building = `${templateDatabase}_${process.pid}`
      await sql`create database ${sql(building)}`
      const env = { ...isolatedEnv(), DATABASE_URL: withDatabase(databaseUrl(baseDatabaseUrl), building) }
      await Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(
            Layer.build(Db.layer.pipe(Layer.provide(AppConfig.layerFrom(env)))),
            (context) => Context.get(context, Db).migrate,
          ),
        ),
      )
      // Another run may have made the same template meanwhile: then this copy is not needed.
      await sql`alter database ${sql(building)} rename to ${sql(templateDatabase)}`.catch(
        () => sql`drop database if exists ${sql(building)} with (force)`,
      )
    }
    const stale = await sql<Array<{ datname: string }>>`
      select datname from pg_database where datname like 'ps\_template\_%' and datname <> ${templateDatabase}`
    for (const { datname } of stale) {
      // One in use belongs to another run, which drops it in its own time.
      await sql`drop database if exists ${sql(datname)}`.catch(() => undefined)
    }
  } finally {
    await sql.end()
  }
}

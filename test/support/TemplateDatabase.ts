import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import postgres from "postgres"
import { databaseUrl as parseUrl, withDatabase } from "../../backend/platform/DatabaseUrl.ts"

const migrationsDir = fileURLToPath(new URL("../../backend/migrations/", import.meta.url))

/**
 * The migrated database each test's own database is copied from (`CREATE DATABASE ... TEMPLATE`), named after
 * the migration files' contents so that a changed or added migration makes a new one.
 */
export const templateDatabase = `ps_template_${createHash("sha256")
  .update(
    readdirSync(migrationsDir)
      .filter((file) => /^\d{4}_.+\.sql$/.test(file))
      .sort()
      .map((file) => `${file}\n${readFileSync(migrationsDir + file, "utf8")}`)
      .join("\n"),
  )
  .digest("hex")
  .slice(0, 16)}`

/** A connection to the server's `postgres` database, for creating and dropping databases. */
export const adminConnection = (databaseUrl: string) => {
  return postgres(withDatabase(parseUrl(databaseUrl), "postgres"), { max: 1, onnotice: () => undefined })
}

/**
 * Creates the database of `databaseUrl` as a copy of the template. Without the template (a run outside vitest's
 * global set-up) it does nothing: the service then creates the database and applies every migration itself.
 */
export const createFromTemplate = async (databaseUrl: string) => {
  const name = parseUrl(databaseUrl).database
  const sql = adminConnection(databaseUrl)
  try {
    await sql`create database ${sql(name)} template ${sql(templateDatabase)}`
  } catch (error) {
    // 3D000: no template; 55006: the template is in use (a set-up still migrating it).
    const code = (error as postgres.PostgresError).code
    if (code !== "3D000" && code !== "55006") throw error
  } finally {
    await sql.end()
  }
}

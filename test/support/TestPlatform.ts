import { randomBytes } from "node:crypto"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { Effect, Layer, References } from "effect"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { Streams } from "../../backend/contract/Streams.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { databaseUrl, withDatabase } from "../../backend/platform/DatabaseUrl.ts"
import { DocumentBuckets } from "../../backend/policies/Config.ts"
import { adminConnection, createFromTemplate } from "./TemplateDatabase.ts"

export const baseDatabaseUrl =
  process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/partner_service"
export const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222"

/**
 * The settings production requires beyond the base env: a real payment provider, whose key here is a test key
 * no call ever uses, a full-cost secret hash, and the insurer and contact the renter's pages name.
 */
export const PRODUCTION = {
  SERVICE_ENV: "production",
  SECRET_HASH_COST: "15",
  PAYMENT_PROVIDER: "stripe",
  STRIPE_SECRET_KEY: "sk_test_production",
  INSURER_NAME: "Production Test Insurance Company",
  SUPPORT_EMAIL: "support@production.test",
  INSURER_ADDRESS: "1 Production Plaza, Springfield, IL 62701",
  INSURER_LICENSE_NUMBER: "PT-1234567",
  DEPOSIT_HOLDER_NAME: "Production Test Deposits, LLC",
} as const

/** A database name and subject prefix of this test's own, so test files run in parallel on one server. */
export const isolatedEnv = (overrides: Record<string, string> = {}) => {
  const id = randomBytes(5).toString("hex")
  return {
    ...process.env,
    DATABASE_URL: withDatabase(databaseUrl(baseDatabaseUrl), `ps_test_${id}`),
    NATS_URL: natsUrl,
    NATS_SUBJECT_PREFIX: `t${id}`,
    LOG_LEVEL: "warn",
    MASTER_KEY: randomBytes(32).toString("base64"),
    // scrypt's cheapest allowed cost: the same code at a 32nd of the work a production hash takes.
    SECRET_HASH_COST: "10",
    // JetStream reserves each stream's byte limit out of the shared server's storage while the stream exists.
    ...Object.fromEntries(
      [...Object.keys(Streams), ...Object.keys(DocumentBuckets)].map((name) => [
        `NATS_MAX_BYTES_${name}`,
        "128MB",
      ]),
    ),
    ...overrides,
  } as Record<string, string>
}

/** Drops what `isolatedEnv` made: the database and every stream whose name carries the prefix. */
export const dropIsolated = async (env: Record<string, string>) => {
  const name = databaseUrl(env.DATABASE_URL!).database
  const sql = adminConnection(env.DATABASE_URL!)
  await sql`drop database if exists ${sql(name)} with (force)`
  await sql.end()
  const nc = await connect({ servers: env.NATS_URL ?? natsUrl })
  const jsm = await jetstreamManager(nc)
  const streamPrefix = `${env.NATS_SUBJECT_PREFIX!.toUpperCase()}_`
  for await (const stream of jsm.streams.names()) {
    // Object store buckets are streams too, named `OBJ_<bucket>`.
    if (stream.startsWith(streamPrefix) || stream.startsWith(`OBJ_${streamPrefix}`)) {
      await jsm.streams.delete(stream)
    }
  }
  await nc.close()
}

/**
 * AppConfig for an isolated env whose database starts as a copy of the migrated template; its release drops the
 * database and streams after everything built on it.
 */
export const isolationLayer = (env: Record<string, string>) =>
  Layer.effectDiscard(
    Effect.acquireRelease(
      Effect.promise(() => createFromTemplate(env.DATABASE_URL!)),
      () => Effect.promise(() => dropIsolated(env)),
    ),
  ).pipe(Layer.provideMerge(AppConfig.layerFrom(env)))

/** The platform on a fresh database and subject prefix. */
export const testPlatform = (overrides: Record<string, string> = {}) => {
  const env = isolatedEnv(overrides)
  return {
    env,
    layer: PlatformLayer.pipe(
      Layer.provideMerge(isolationLayer(env)),
      Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")),
    ),
  }
}

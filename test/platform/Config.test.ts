import { availableParallelism } from "node:os"
import { randomBytes } from "node:crypto"
import { fileURLToPath } from "node:url"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { Streams } from "../../backend/contract/Streams.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ConfigInvalid, withByteLimits } from "../../backend/platform/Settings.ts"
import { databaseUrl } from "../../backend/platform/DatabaseUrl.ts"
import { DocumentBuckets } from "../../backend/policies/Config.ts"
import { spawnProcess } from "../support/ChildProcess.ts"
import { dropIsolated, isolatedEnv, natsUrl } from "../support/TestPlatform.ts"
import { adminConnection } from "../support/TemplateDatabase.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

const PORT_FORM = "a port number from 0 to 65535"
const MASTER_KEY_FORM = "the base64 encoding of 32 random bytes"
const masterKey = randomBytes(32).toString("base64")

const badValues: ReadonlyArray<{
  variable: string
  value: string
  shown?: string
  expected: string
  sensitive?: boolean
}> = [
  { variable: "PARTNER_API_PORT", value: "abc", expected: PORT_FORM },
  { variable: "CONSOLE_PORT", value: "70000", expected: PORT_FORM },
  { variable: "SERVICE_ENV", value: "prod", expected: "one of development, staging, production" },
  {
    variable: "ROLES",
    value: "partner-api,bogus",
    expected: "a comma-separated list of partner-api, ingest-api, enrollment, console, portal, workers",
  },
  {
    variable: "DATABASE_URL",
    value: "mysql://admin:s3cret@db/x",
    expected: "a postgres:// or postgresql:// URL",
    sensitive: true,
  },
  {
    variable: "DATABASE_URL",
    value: "postgres://app:s3cret@db1:5432,db2:99999/partners?target_session_attrs=primary",
    expected: "the port of host 2 (db2) is not a number from 1 to 65535",
    sensitive: true,
  },
  {
    variable: "DATABASE_URL",
    value: "postgres://app:s3cret@db1:5432,db2:5432/partners?target_session_attrs=primary-only",
    expected: 'target_session_attrs "primary-only" is not one of',
    sensitive: true,
  },
  {
    variable: "NATS_SUBJECT_PREFIX",
    value: "a..b",
    expected: "dot-separated tokens of letters, digits, '-' or '_'",
  },
  {
    variable: "MASTER_KEY",
    value: randomBytes(16).toString("base64"),
    shown: "16 bytes in base64",
    expected: MASTER_KEY_FORM,
    sensitive: true,
  },
  { variable: "LOG_LEVEL", value: "loud", expected: "one of trace, debug, info, warn, error" },
  { variable: "HTTP_PROCESSES", value: "0", expected: "a whole number from 1 to 64, or auto (one per CPU)" },
  { variable: "DEAD_LETTER_RETENTION_DAYS", value: "30d", expected: "a whole number of days from 1 to 3650" },
  { variable: "RETENTION_SWEEP_SECONDS", value: "0", expected: "a whole number of seconds from 1 to 86400" },
  { variable: "NATS_MAX_BYTES_INGEST", value: "2 GiB", expected: "a number of bytes from 1MB to 1024TB" },
  { variable: "NATS_MAX_BYTES_EVENTS", value: "1000", expected: "a number of bytes from 1MB to 1024TB" },
  {
    variable: "OTEL_EXPORTER_OTLP_PROTOCOL",
    value: "grpc",
    expected: "one of http/json, http/protobuf (gRPC is not supported)",
  },
]

/**
 * AppConfig as the service reads it from `env`, and nothing else: no process environment leaks in. With it, the
 * byte limits of the contract's streams and the policy documents' bucket, read from `env` as `Nats` and
 * `ObjectStore` read them with their tables.
 */
const configFrom = (env: Record<string, string>) =>
  Effect.provide(
    Effect.gen(function* () {
      const limits = yield* withByteLimits({ ...Streams, ...DocumentBuckets })
      const streamMaxBytes = Object.fromEntries(
        Object.entries(limits).map(([name, { maxBytes }]) => [name, maxBytes]),
      )
      return { ...(yield* AppConfig), streamMaxBytes }
    }),
    AppConfig.layerFrom(env),
  )

const configInvalid = (env: Record<string, string>) =>
  configFrom(env).pipe(
    Effect.flip,
    Effect.map((error) => {
      assert.instanceOf(error, ConfigInvalid)
      return error as ConfigInvalid
    }),
  )

const databaseExists = (url: string) =>
  Effect.promise(async () => {
    const sql = adminConnection(url)
    const rows = await sql`select 1 from pg_database where datname = ${databaseUrl(url).database}`
    await sql.end()
    return rows.length > 0
  })

const streamsWithPrefix = (prefix: string) =>
  Effect.promise(async () => {
    const nc = await connect({ servers: natsUrl })
    const names: Array<string> = []
    for await (const name of (await jetstreamManager(nc)).streams.names()) {
      if (name.startsWith(`${prefix.toUpperCase()}_`)) names.push(name)
    }
    await nc.close()
    return names
  })

describe("AppConfig", () => {
  it.effect("uses the documented defaults when the environment is empty", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({})
      assert.deepStrictEqual(config.roles, [
        "partner-api",
        "ingest-api",
        "enrollment",
        "console",
        "portal",
        "workers",
      ])
      assert.strictEqual(config.serviceEnv, "development")
      assert.strictEqual(
        Redacted.value(config.databaseUrl),
        "postgres://postgres@127.0.0.1:5432/partner_service",
      )
      assert.strictEqual(config.natsUrl, "nats://127.0.0.1:4222")
      assert.strictEqual(config.natsSubjectPrefix, "")
      assert.deepStrictEqual(config.ports, {
        "partner-api": 8080,
        "ingest-api": 8081,
        enrollment: 8082,
        console: 8083,
      })
      assert.strictEqual(config.publicBaseUrl, "http://127.0.0.1:8080")
      assert.strictEqual(config.ingestBaseUrl, "http://127.0.0.1:8081")
      assert.strictEqual(config.enrollmentHost, "http://127.0.0.1:8082")
      assert.isTrue(Option.isNone(config.masterKey))
      assert.strictEqual(config.httpMaxBodyBytes, 2 * 1024 * 1024)
      assert.strictEqual(config.logLevel, "info")
      assert.deepStrictEqual(config.retention, { deadLetterDays: 30, sweepSeconds: 300 })
      assert.isTrue(Option.isNone(config.traceExport))
      const GIB = 1024 ** 3
      assert.deepStrictEqual(config.streamMaxBytes, {
        INGEST: GIB,
        ROSTER: GIB / 4,
        ELIGIBILITY: GIB / 2,
        EVENTS: GIB,
        WEBHOOKS: GIB,
        DOCUMENTS: GIB / 8,
        POLICY_DOCUMENTS: 4 * GIB,
      })
    }),
  )

  it.effect(
    "exports traces only when an OTLP endpoint is set, to its /v1/traces unless given the traces URL",
    () =>
      Effect.gen(function* () {
        const exportOf = (env: Record<string, string>) => Effect.map(configFrom(env), (c) => c.traceExport)
        assert.deepStrictEqual(
          yield* exportOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }),
          Option.some({
            url: "http://collector:4318/v1/traces",
            protocol: "http/protobuf" as const,
            serviceName: "partner-service",
            headers: {},
            exportIntervalMs: 5000,
          }),
        )
        assert.deepStrictEqual(
          yield* exportOf({
            OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/otlp/traces",
            OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
            OTEL_SERVICE_NAME: "partners-staging",
            OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Bearer%20abc,x-team=partners",
            OTEL_BSP_SCHEDULE_DELAY: "250",
          }),
          Option.some({
            url: "https://traces.example/otlp/traces",
            protocol: "http/json" as const,
            serviceName: "partners-staging",
            headers: { authorization: "Bearer abc", "x-team": "partners" },
            exportIntervalMs: 250,
          }),
        )
        assert.isTrue(Option.isNone(yield* exportOf({ OTEL_SERVICE_NAME: "partners" })))
      }),
  )

  it.effect("reads stream byte limits plain or with a 1024-based unit", () =>
    Effect.gen(function* () {
      const limit = (value: string) =>
        Effect.map(configFrom({ NATS_MAX_BYTES_WEBHOOKS: value }), (config) => config.streamMaxBytes.WEBHOOKS)
      assert.strictEqual(yield* limit("1048576"), 1024 ** 2)
      assert.strictEqual(yield* limit("512MB"), 512 * 1024 ** 2)
      assert.strictEqual(yield* limit("3gb"), 3 * 1024 ** 3)
      assert.strictEqual(yield* limit("1TB"), 1024 ** 4)
    }),
  )

  it.effect("accepts a DATABASE_URL of several hosts, each with its port, and target_session_attrs", () =>
    Effect.gen(function* () {
      const url = "postgres://app@db1.internal:5432,db2.internal:5433/partners?target_session_attrs=primary"
      const config = yield* configFrom({ DATABASE_URL: url })
      assert.strictEqual(Redacted.value(config.databaseUrl), url)
    }),
  )

  for (const { variable, value, shown, expected, sensitive } of badValues) {
    it.effect(
      `fails naming ${variable} and its expected form when it is ${shown ?? JSON.stringify(value)}`,
      () =>
        Effect.gen(function* () {
          const error = yield* configInvalid({ [variable]: value })
          assert.strictEqual(error.variable, variable)
          assert.include(error.message, variable)
          assert.include(error.message, expected)
          if (sensitive) {
            // A key, or a URL that may carry a password, is never echoed back into logs.
            assert.isUndefined(error.received)
            assert.notInclude(error.message, value)
          } else {
            assert.strictEqual(error.received, value)
          }
        }),
    )
  }

  /** Production needs a real payment provider besides MASTER_KEY. */
  const PAYMENTS = { PAYMENT_PROVIDER: "stripe", STRIPE_SECRET_KEY: "sk_test_config" }

  for (const serviceEnv of ["staging", "production"]) {
    it.effect(`requires MASTER_KEY when SERVICE_ENV is ${serviceEnv}`, () =>
      Effect.gen(function* () {
        const error = yield* configInvalid({ SERVICE_ENV: serviceEnv })
        assert.strictEqual(error.variable, "MASTER_KEY")
        assert.include(error.message, `SERVICE_ENV=${serviceEnv}`)
        assert.include(error.message, MASTER_KEY_FORM)

        const config = yield* configFrom({ SERVICE_ENV: serviceEnv, MASTER_KEY: masterKey, ...PAYMENTS })
        assert.strictEqual(Redacted.value(Option.getOrThrow(config.masterKey)), masterKey)
      }),
    )
  }

  it.effect(
    "serves the gateways from one process unless HTTP_PROCESSES says how many, auto one per CPU",
    () =>
      Effect.gen(function* () {
        const processes = (env: Record<string, string>) =>
          Effect.map(configFrom(env), (config) => config.httpProcesses)
        assert.strictEqual(yield* processes({}), 1)
        assert.strictEqual(yield* processes({ HTTP_PROCESSES: "2" }), 2)
        assert.strictEqual(yield* processes({ HTTP_PROCESSES: "auto" }), availableParallelism())
        assert.strictEqual((yield* configInvalid({ HTTP_PROCESSES: "65" })).variable, "HTTP_PROCESSES")
      }),
  )

  it.effect("takes a cheaper secret hash only outside production", () =>
    Effect.gen(function* () {
      const cost = (env: Record<string, string>) =>
        Effect.map(configFrom(env), (config) => config.secretHashCost)
      assert.strictEqual(yield* cost({}), 15)
      assert.strictEqual(yield* cost({ SECRET_HASH_COST: "10" }), 10)
      const production = { SERVICE_ENV: "production", MASTER_KEY: masterKey, ...PAYMENTS }
      assert.strictEqual(yield* cost(production), 15)
      assert.strictEqual(yield* cost({ ...production, SECRET_HASH_COST: "16" }), 16)
      const refused = yield* configInvalid({ ...production, SECRET_HASH_COST: "10" })
      assert.strictEqual(refused.variable, "SECRET_HASH_COST")
      assert.include(refused.message, "a whole number from 15 to 17 in production")
      assert.strictEqual((yield* configInvalid({ SECRET_HASH_COST: "18" })).variable, "SECRET_HASH_COST")
    }),
  )

  it.live("fails start-up naming the variable when PARTNER_API_PORT is not a port, and starts nothing", () =>
    Effect.gen(function* () {
      const env = isolatedEnv({ PARTNER_API_PORT: "abc", LOG_LEVEL: "info" })
      yield* Effect.addFinalizer(() => Effect.promise(() => dropIsolated(env)))
      const service = yield* spawnProcess(process.execPath, ["backend/main.ts"], {
        cwd: root,
        env,
      })
      const exit = yield* service.exited
      assert.notStrictEqual(exit.code, 0, service.stderr())
      assert.include(service.stderr(), "PARTNER_API_PORT")
      assert.include(service.stderr(), PORT_FORM)
      assert.strictEqual(service.stdout(), "", "the service logged as if it had started")
      assert.isFalse(yield* databaseExists(env.DATABASE_URL!), "the database was created")
      assert.deepStrictEqual(yield* streamsWithPrefix(env.NATS_SUBJECT_PREFIX!), [])
    }),
  )
})

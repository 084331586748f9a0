import { availableParallelism } from "node:os"
import ipaddr from "ipaddr.js"
import { Config, ConfigProvider, Context, Effect, Layer, Option, Redacted, Result } from "effect"
import { parseDatabaseUrl } from "./DatabaseUrl.ts"
import { cidrList, ConfigInvalid, integer, oneOf, raw, setting, url } from "./Settings.ts"

export const Roles = ["partner-api", "ingest-api", "enrollment", "console", "portal", "workers"] as const
export type Role = (typeof Roles)[number]
export type HttpRole = Exclude<Role, "workers">

export const ServiceEnvs = ["development", "staging", "production"] as const
export type ServiceEnv = (typeof ServiceEnvs)[number]

/**
 * DATABASE_URL, with several hosts when the database fails over (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=primary`),
 * which WHATWG `new URL` refuses; a malformed one is refused naming the part at fault, never echoing the value.
 */
const databaseUrlSetting = Effect.gen(function* () {
  const value = Option.getOrUndefined(yield* raw("DATABASE_URL"))
    ?.trim()
    .replace(/\/+$/, "")
  if (value === undefined || value === "") return "postgres://postgres@127.0.0.1:5432/partner_service"
  const parsed = parseDatabaseUrl(value)
  if (Result.isFailure(parsed)) {
    return yield* new ConfigInvalid({
      variable: "DATABASE_URL",
      expected: "a postgres:// or postgresql:// URL, its hosts as host:port separated by commas",
      problem: parsed.failure,
    })
  }
  return value
})

const roles = (value: string) => {
  const list = value.split(",").map((r) => r.trim())
  return list.length > 0 && list.every((r): r is Role => (Roles as ReadonlyArray<string>).includes(r))
    ? [...new Set(list as Array<Role>)]
    : undefined
}

/** A NATS subject token sequence usable as a prefix: letters, digits, `-`, `_`, separated by dots. */
const subjectPrefix = (value: string) =>
  /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(value) ? value : undefined

const masterKey = (value: string) => {
  const bytes = Buffer.from(value, "base64")
  return bytes.length === 32 && /^[A-Za-z0-9+/]+={0,2}$/.test(value) ? Redacted.make(value) : undefined
}

const port = (name: string, fallback: number) =>
  setting(name, "a port number from 0 to 65535 (0 picks a free port)", integer(0, 65535), () => fallback)

export interface AppConfigShape {
  readonly roles: ReadonlyArray<Role>
  readonly serviceEnv: ServiceEnv
  readonly databaseUrl: Redacted.Redacted<string>
  readonly natsUrl: string
  readonly natsSubjectPrefix: string
  readonly natsStreamReplicas: number
  readonly ports: Readonly<Record<Exclude<HttpRole, "portal">, number>>
  readonly publicBaseUrl: string
  readonly ingestBaseUrl: string
  readonly enrollmentHost: string
  /** The operator console's public base URL: policies link to `{CONSOLE_BASE_URL}/policies/<id>`. */
  readonly consoleBaseUrl: string
  /** The `aud` each gateway's tokens carry and require; issued to partners with their credentials. */
  readonly audiences: { readonly partner: string; readonly ingest: string }
  readonly tokenTtlSeconds: number
  /**
   * Client secrets and operator passwords checked at once in the process (each a slow hash on libuv's thread
   * pool): the rest wait, so a flood of token requests or sign-ins leaves the event loop and the other cores to
   * the requests already authenticated.
   */
  readonly tokenHashConcurrency: number
  /**
   * Token requests, and apart from them console sign-ins, that one source address may have in progress at once
   * (waiting for a hash slot or in one); one more is a 429.
   */
  readonly secretChecksPerSource: number
  /**
   * scrypt's cost as log2 of N for new client secrets and operator passwords; each stored hash carries its own,
   * so a change applies to hashes made after it.
   */
  readonly secretHashCost: number
  /** base64 of 32 bytes; absent in development until the local key file is created by Crypto */
  readonly masterKey: Option.Option<Redacted.Redacted<string>>
  readonly httpMaxBodyBytes: number
  /**
   * Processes serving the gateway roles on their shared ports (`node:cluster`): 1 serves them in this process;
   * more forks that many, and this process runs the other roles and supervises them.
   */
  readonly httpProcesses: number
  /**
   * Networks of the reverse proxies in front of the gateways: only a connection from one of them has its client
   * address read from `X-Forwarded-For`. None by default: the socket's address is the client's.
   */
  readonly trustedProxies: ReadonlyArray<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]>
  /**
   * A port of its own serving only `/metrics` (processes without the console, such as workers); none when unset.
   * `/metrics` is never on the public gateways.
   */
  readonly metricsPort: Option.Option<number>
  /** The bearer token `/metrics` asks for, when set. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  readonly retention: {
    /** Days a dead letter is kept. */
    readonly deadLetterDays: number
    /** Seconds between two sweeps of what is past its retention (in the workers role). */
    readonly sweepSeconds: number
  }
  readonly logLevel: "trace" | "debug" | "info" | "warn" | "error"
  readonly dataDir: string
  /** Where traces go over OTLP/HTTP (the standard `OTEL_*` variables); none, and nothing is exported. */
  readonly traceExport: Option.Option<TraceExport>
}

export interface TraceExport {
  /** The collector's traces URL (`.../v1/traces`). */
  readonly url: string
  readonly protocol: "http/json" | "http/protobuf"
  readonly serviceName: string
  readonly headers: Readonly<Record<string, string>>
  /** Milliseconds between two exports of the spans ended meanwhile. */
  readonly exportIntervalMs: number
}

/** `key=value,key2=value2`, values percent-encoded, as `OTEL_EXPORTER_OTLP_HEADERS` has them. */
const otlpHeaders = (value: string) => {
  const out: Record<string, string> = {}
  for (const pair of value.split(",")) {
    if (pair.trim() === "") continue
    const at = pair.indexOf("=")
    if (at <= 0) return undefined
    try {
      out[decodeURIComponent(pair.slice(0, at).trim()).toLowerCase()] = decodeURIComponent(
        pair.slice(at + 1).trim(),
      )
    } catch {
      return undefined
    }
  }
  return out
}

/**
 * The OpenTelemetry exporter variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is the traces URL as given,
 * `OTEL_EXPORTER_OTLP_ENDPOINT` a base that `/v1/traces` is appended to; with neither, no export.
 */
const traceExport = Effect.gen(function* () {
  const httpUrl = url(["http:", "https:"])
  const tracesUrl = yield* setting(
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "an http(s) URL of a collector's OTLP/HTTP traces endpoint",
    httpUrl,
    () => undefined,
    { sensitive: true },
  )
  const baseUrl = yield* setting(
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "an http(s) URL of a collector's OTLP/HTTP endpoint (`/v1/traces` is appended)",
    httpUrl,
    () => undefined,
    { sensitive: true },
  )
  const protocol = yield* setting(
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "one of http/json, http/protobuf (gRPC is not supported)",
    oneOf(["http/json", "http/protobuf"] as const),
    () => "http/protobuf" as const,
  )
  const serviceName = yield* setting(
    "OTEL_SERVICE_NAME",
    "a service name",
    (v) => v,
    () => "partner-service",
  )
  const headers = yield* setting(
    "OTEL_EXPORTER_OTLP_HEADERS",
    "comma-separated key=value pairs, values percent-encoded",
    otlpHeaders,
    () => ({}),
    { sensitive: true },
  )
  const exportIntervalMs = yield* setting(
    "OTEL_BSP_SCHEDULE_DELAY",
    "a whole number of milliseconds from 10 to 60000",
    integer(10, 60_000),
    () => 5000,
  )
  const target = tracesUrl ?? (baseUrl === undefined ? undefined : `${baseUrl}/v1/traces`)
  return Option.fromUndefinedOr(
    target === undefined ? undefined : { url: target, protocol, serviceName, headers, exportIntervalMs },
  )
})

const LogLevels = ["trace", "debug", "info", "warn", "error"] as const

/** Settings of one area of `AppConfigShape`, read by their own reader. */
type Settings<K extends keyof AppConfigShape> = Effect.Effect<
  Pick<AppConfigShape, K>,
  ConfigInvalid | Config.ConfigError
>

/** What the process runs as: its roles and its environment. */
const serviceSettings: Settings<"roles" | "serviceEnv"> = Effect.gen(function* () {
  const serviceEnv = yield* setting(
    "SERVICE_ENV",
    "one of development, staging, production",
    oneOf(ServiceEnvs),
    () => "development" as const,
  )
  const roleList = yield* setting("ROLES", `a comma-separated list of ${Roles.join(", ")}`, roles, () => [
    ...Roles,
  ])
  return { roles: roleList, serviceEnv }
})

/** The gateways' ports and public URLs (each defaulting to its local port), audiences, body size and proxies. */
const gatewaySettings: Settings<
  | "ports"
  | "publicBaseUrl"
  | "ingestBaseUrl"
  | "enrollmentHost"
  | "consoleBaseUrl"
  | "audiences"
  | "httpMaxBodyBytes"
  | "httpProcesses"
  | "trustedProxies"
> = Effect.gen(function* () {
  const ports = {
    "partner-api": yield* port("PARTNER_API_PORT", 8080),
    "ingest-api": yield* port("INGEST_API_PORT", 8081),
    enrollment: yield* port("ENROLLMENT_PORT", 8082),
    console: yield* port("CONSOLE_PORT", 8083),
  }
  const localUrl = (p: number) => `http://127.0.0.1:${p === 0 ? 80 : p}`
  const httpUrl = (name: string, fallback: number) =>
    setting(name, "an http(s) URL", url(["http:", "https:"]), () => localUrl(fallback))
  const publicBaseUrl = yield* httpUrl("PUBLIC_BASE_URL", ports["partner-api"])
  const ingestBaseUrl = yield* httpUrl("INGEST_BASE_URL", ports["ingest-api"])
  const audience = (name: string, fallback: string) =>
    setting(
      name,
      "a non-empty audience string without spaces (usually a URL)",
      (v) => (/\s/.test(v) ? undefined : v),
      () => fallback,
    )
  return {
    ports,
    publicBaseUrl,
    ingestBaseUrl,
    enrollmentHost: yield* httpUrl("ENROLLMENT_HOST", ports.enrollment),
    consoleBaseUrl: yield* httpUrl("CONSOLE_BASE_URL", ports.console),
    audiences: {
      partner: yield* audience("PARTNER_API_AUDIENCE", publicBaseUrl),
      ingest: yield* audience("INGEST_API_AUDIENCE", ingestBaseUrl),
    },
    httpMaxBodyBytes: yield* setting(
      "HTTP_MAX_BODY_BYTES",
      "a whole number of bytes from 1024 to 104857600",
      integer(1024, 100 * 1024 * 1024),
      () => 2 * 1024 * 1024,
    ),
    httpProcesses: yield* setting(
      "HTTP_PROCESSES",
      "a whole number from 1 to 64, or auto (one per CPU)",
      (v) => (v.toLowerCase() === "auto" ? availableParallelism() : integer(1, 64)(v)),
      () => 1,
    ),
    trustedProxies: yield* setting(
      "TRUSTED_PROXIES",
      "comma-separated IP addresses or CIDRs such as 10.0.0.0/8,fd00::/8",
      cidrList,
      () => [],
    ),
  }
})

/**
 * The master key (required outside development), tokens, and the hashing of client secrets and passwords (a
 * cheaper hash only outside production).
 */
const secretSettings = (
  serviceEnv: ServiceEnv,
): Settings<
  "masterKey" | "tokenTtlSeconds" | "tokenHashConcurrency" | "secretChecksPerSource" | "secretHashCost"
> =>
  Effect.gen(function* () {
    const masterKeyValue = Option.fromUndefinedOr(
      yield* setting(
        "MASTER_KEY",
        "the base64 encoding of 32 random bytes (for example `openssl rand -base64 32`)",
        masterKey,
        () => undefined,
      ),
    )
    if (Option.isNone(masterKeyValue) && serviceEnv !== "development") {
      return yield* new ConfigInvalid({
        variable: "MASTER_KEY",
        expected: `set outside development (SERVICE_ENV=${serviceEnv}): the base64 encoding of 32 random bytes`,
      })
    }
    return {
      masterKey: masterKeyValue,
      tokenTtlSeconds: yield* setting(
        "TOKEN_TTL_SECONDS",
        "a whole number of seconds from 60 to 86400",
        integer(60, 86_400),
        () => 8600,
      ),
      tokenHashConcurrency: yield* setting(
        "TOKEN_HASH_CONCURRENCY",
        "a whole number from 1 to 64",
        integer(1, 64),
        () => Math.max(1, Math.floor(availableParallelism() / 2)),
      ),
      secretChecksPerSource: yield* setting(
        "SECRET_CHECKS_PER_SOURCE",
        "a whole number from 1 to 64",
        integer(1, 64),
        () => 4,
      ),
      secretHashCost: yield* setting(
        "SECRET_HASH_COST",
        serviceEnv === "production"
          ? "a whole number from 15 to 17 in production"
          : "a whole number from 10 to 17",
        integer(serviceEnv === "production" ? 15 : 10, 17),
        () => 15,
      ),
    }
  })

/** Where Postgres is, and where the process keeps its local files. */
const storageSettings: Settings<"databaseUrl" | "dataDir"> = Effect.gen(function* () {
  return {
    databaseUrl: Redacted.make(yield* databaseUrlSetting),
    dataDir: yield* setting(
      "PARTNER_DATA_DIR",
      "a directory path",
      (v) => v,
      () => `${process.cwd()}/.data`,
    ),
  }
})

/**
 * The NATS servers, the deployment's subject prefix and the streams' replicas. The streams' byte limits are read
 * with their table (`withByteLimits`).
 */
const natsSettings: Settings<"natsUrl" | "natsSubjectPrefix" | "natsStreamReplicas"> = Effect.gen(
  function* () {
    return {
      natsUrl: yield* setting(
        "NATS_URL",
        "a nats:// URL (several may be separated by commas)",
        (v) => (v.split(",").every((u) => url(["nats:", "tls:"])(u.trim()) !== undefined) ? v : undefined),
        () => "nats://127.0.0.1:4222",
      ),
      natsSubjectPrefix: yield* setting(
        "NATS_SUBJECT_PREFIX",
        "dot-separated tokens of letters, digits, '-' or '_' (for example `staging` or `test.a1`)",
        subjectPrefix,
        () => "",
      ),
      natsStreamReplicas: yield* setting(
        "NATS_STREAM_REPLICAS",
        "a whole number from 1 to 5 (at most the number of JetStream servers in the cluster)",
        integer(1, 5),
        () => 1,
      ),
    }
  },
)

/** The port and token of `/metrics`, neither set by default. */
const metricsSettings: Settings<"metricsPort" | "metricsToken"> = Effect.gen(function* () {
  return {
    metricsPort: Option.fromUndefinedOr(
      yield* setting(
        "METRICS_PORT",
        "a port number from 0 to 65535 (0 picks a free port)",
        integer(0, 65535),
        () => undefined,
      ),
    ),
    metricsToken: Option.fromUndefinedOr(
      yield* setting(
        "METRICS_TOKEN",
        "a token of 16 to 256 visible ASCII characters",
        (v) => (/^[\x21-\x7e]{16,256}$/.test(v) ? Redacted.make(v) : undefined),
        () => undefined,
      ),
    ),
  }
})

/** How long dead letters are kept, and how often what is past its retention is swept. */
const retentionSettings: Settings<"retention"> = Effect.gen(function* () {
  return {
    retention: {
      deadLetterDays: yield* setting(
        "DEAD_LETTER_RETENTION_DAYS",
        "a whole number of days from 1 to 3650",
        integer(1, 3650),
        () => 30,
      ),
      sweepSeconds: yield* setting(
        "RETENTION_SWEEP_SECONDS",
        "a whole number of seconds from 1 to 86400",
        integer(1, 86_400),
        () => 300,
      ),
    },
  }
})

/** What the process logs, and where its traces go. */
const observabilitySettings: Settings<"logLevel" | "traceExport"> = Effect.gen(function* () {
  return {
    logLevel: yield* setting(
      "LOG_LEVEL",
      `one of ${LogLevels.join(", ")}`,
      oneOf(LogLevels),
      () => "info" as const,
    ),
    traceExport: yield* traceExport,
  }
})

/** The service's own settings, area by area. */
export const loadAppConfig: Effect.Effect<AppConfigShape, ConfigInvalid | Config.ConfigError> = Effect.gen(
  function* () {
    const service = yield* serviceSettings
    return {
      ...service,
      ...(yield* gatewaySettings),
      ...(yield* secretSettings(service.serviceEnv)),
      ...(yield* storageSettings),
      ...(yield* natsSettings),
      ...(yield* metricsSettings),
      ...(yield* retentionSettings),
      ...(yield* observabilitySettings),
    }
  },
)

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()(
  "partner-service/platform/AppConfig",
) {
  static readonly layer = Layer.effect(AppConfig, loadAppConfig)

  /**
   * The same settings read from a plain record instead of the process environment; the contexts' own settings
   * (`WebhookConfig`, `PaymentsConfig`, `IngestConfig`), built on this layer, are read from the same record.
   */
  static readonly layerFrom = (env: Record<string, string | undefined>) =>
    Layer.effect(AppConfig, loadAppConfig).pipe(
      Layer.provideMerge(ConfigProvider.layer(ConfigProvider.fromEnv({ env: definedOnly(env) }))),
    )
}

const definedOnly = (env: Record<string, string | undefined>) =>
  Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined))

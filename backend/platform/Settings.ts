import ipaddr from "ipaddr.js"
import { Config, Effect, Option, Schema } from "effect"

/**
 * How a setting is read and checked, for the service's own settings (`Config.ts`) and every context's: a variable
 * of the environment (or of the record a test passes), its check, its default, and the error that names it.
 */

export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>()("ConfigInvalid", {
  variable: Schema.String,
  expected: Schema.String,
  received: Schema.optional(Schema.String),
  /** What is wrong, when the value has parts and saying which one helps more than repeating the value. */
  problem: Schema.optional(Schema.String),
}) {
  override get message() {
    const got = this.received === undefined ? "" : ` (got ${JSON.stringify(this.received)})`
    const problem = this.problem === undefined ? "" : `: ${this.problem}`
    return `Invalid configuration: ${this.variable} must be ${this.expected}${got}${problem}`
  }
}

export const raw = (name: string) => Config.option(Config.String(name))

/** Variables whose value may hold a secret (a key, or a password inside a URL): never echoed in errors. */
const SENSITIVE = new Set(["MASTER_KEY", "DATABASE_URL", "NATS_URL", "METRICS_TOKEN"])

/**
 * One environment variable: read as a string, decoded with `parse`, failing with a message that names the
 * variable and its expected form. Empty strings count as unset so `FOO=` falls back to the default. A `sensitive`
 * value (a key, a URL that may carry a password) is never echoed in the error.
 */
export const setting = <A>(
  name: string,
  expected: string,
  parse: (value: string) => A | undefined,
  fallback: () => A,
  options: { readonly sensitive?: boolean } = {},
): Effect.Effect<A, ConfigInvalid | Config.ConfigError> =>
  Effect.gen(function* () {
    const value = Option.getOrUndefined(yield* raw(name))?.trim()
    if (value === undefined || value === "") return fallback()
    const parsed = parse(value)
    if (parsed === undefined) {
      return yield* new ConfigInvalid({
        variable: name,
        expected,
        ...(options.sensitive || SENSITIVE.has(name) ? {} : { received: value }),
      })
    }
    return parsed
  })

/** `10.0.0.0/8,192.0.2.7` as networks; a bare address is a network of one. */
export const cidrList = (value: string) => {
  const networks: Array<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]> = []
  for (const part of value.split(",").map((p) => p.trim())) {
    if (part === "") continue
    try {
      if (part.includes("/")) networks.push(ipaddr.parseCIDR(part))
      else {
        const address = ipaddr.parse(part)
        networks.push([address, address.kind() === "ipv4" ? 32 : 128])
      }
    } catch {
      return undefined
    }
  }
  return networks
}

export const integer = (min: number, max: number) => (value: string) => {
  if (!/^\d+$/.test(value)) return undefined
  const n = Number(value)
  return n >= min && n <= max ? n : undefined
}

/** A plain decimal number (`250`, `0.25`), without exponent or sign. */
export const decimal = (min: number, max: number) => (value: string) => {
  if (!/^\d+(\.\d+)?$/.test(value)) return undefined
  const n = Number(value)
  return n >= min && n <= max ? n : undefined
}

export const oneOf =
  <const L extends ReadonlyArray<string>>(values: L) =>
  (value: string): L[number] | undefined =>
    values.includes(value) ? value : undefined

export const boolean = (value: string) =>
  ({ true: true, "1": true, yes: true, false: false, "0": false, no: false })[value.toLowerCase()]

export const url = (protocols: ReadonlyArray<string>) => (value: string) => {
  try {
    const parsed = new URL(value)
    return protocols.includes(parsed.protocol) ? value.replace(/\/+$/, "") : undefined
  } catch {
    return undefined
  }
}

const MIB = 1024 * 1024
const GIB = 1024 * MIB

/** A byte count, plain or with a 1024-based unit: `1073741824`, `512MB`, `2GB`, `1TB`. */
const bytes = (min: number, max: number) => (value: string) => {
  const match = /^(\d+)\s*(KB|MB|GB|TB)?$/i.exec(value)
  if (match === null) return undefined
  const unit = { KB: 1024, MB: MIB, GB: GIB, TB: 1024 * GIB }[(match[2] ?? "").toUpperCase()] ?? 1
  const n = Number(match[1]) * unit
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined
}

/**
 * The byte limit of the stream or object store bucket `name` (its base name): `NATS_MAX_BYTES_<NAME>`, else
 * `fallback`. Read where the streams and buckets are given to the platform, so it names none of them.
 */
export const byteLimit = (name: string, fallback: number) =>
  setting(
    `NATS_MAX_BYTES_${name}`,
    "a number of bytes from 1MB to 1024TB, plain or with a unit (512MB, 2GB, 1TB)",
    bytes(MIB, 1024 * 1024 * GIB),
    () => fallback,
  )

/** `table` with each entry's `maxBytes` the limit in force: its `NATS_MAX_BYTES_<NAME>`, else the table's own. */
export const withByteLimits = <T extends { readonly maxBytes: number }>(
  table: Readonly<Record<string, T>>,
): Effect.Effect<Readonly<Record<string, T>>, ConfigInvalid | Config.ConfigError> =>
  Effect.map(
    Effect.forEach(Object.entries(table), ([name, entry]) =>
      Effect.map(byteLimit(name, entry.maxBytes), (maxBytes) => [name, { ...entry, maxBytes }] as const),
    ),
    Object.fromEntries,
  )

import { Result } from "effect"

/** The values of `target_session_attrs` the driver (postgres.js) knows; libpq's `any` is its absence. */
export const TargetSessionAttrs = ["read-write", "read-only", "primary", "standby", "prefer-standby"] as const

export interface DatabaseHost {
  /** A name or IPv4 address, a socket directory (starting with `/`), or empty for the driver's default. */
  readonly host: string
  /** Absent: the driver's default (`PGPORT`, then 5432). */
  readonly port: number | undefined
}

/**
 * A `postgres://` URL as libpq and postgres.js read it: `postgres://user:pass@h1:5432,h2:5433/db?params`. WHATWG
 * `new URL` refuses a list of hosts, so the URL is split here and each part kept as written, to rebuild it.
 */
export interface DatabaseUrl {
  readonly scheme: string
  /** `user` or `user:password` as written (percent-encoded), or empty. */
  readonly userinfo: string
  readonly hosts: ReadonlyArray<DatabaseHost>
  /** The host list as written. */
  readonly hostList: string
  readonly database: string
  /** What follows `?`, as written, or empty. */
  readonly query: string
  readonly targetSessionAttrs: (typeof TargetSessionAttrs)[number] | undefined
}

const decode = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

const HOST_NAME = /^[A-Za-z0-9._-]+$/

const parseHost = (entry: string, index: number, several: boolean): Result.Result<DatabaseHost, string> => {
  const label = several ? `host ${index + 1}` : "the host"
  if (entry.startsWith("[")) {
    return Result.fail(
      `${label} is an IPv6 address, which the driver cannot reach from a URL: use a host name`,
    )
  }
  const colon = entry.lastIndexOf(":")
  const host = decode(colon === -1 ? entry : entry.slice(0, colon))
  const portText = colon === -1 ? undefined : entry.slice(colon + 1)
  if (host === undefined) return Result.fail(`${label} is not valid percent-encoding`)
  if (several && host === "") return Result.fail(`${label} is empty`)
  if (host.startsWith("/")) {
    return several
      ? Result.fail(`${label} is a socket directory, which cannot be one of several hosts`)
      : Result.succeed({ host, port: undefined })
  }
  // Only a well-formed name is repeated: anything else may be a piece of a password written unencoded.
  if (host !== "" && !HOST_NAME.test(host)) return Result.fail(`${label} is not a host name or IPv4 address`)
  const named = host === "" ? label : `${label} (${host})`
  if (portText === undefined) {
    // The driver gives a host without a port the first host's port, not 5432: with several, each names its own.
    return several
      ? Result.fail(`${named} has no port: with several hosts, give each its port (host:5432)`)
      : Result.succeed({ host, port: undefined })
  }
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : 0
  return port >= 1 && port <= 65535
    ? Result.succeed({ host, port })
    : Result.fail(`the port of ${named} is not a number from 1 to 65535`)
}

/**
 * Reads a database URL, or says what is wrong with it. The message names the part at fault and never repeats the
 * user or password.
 */
export const parseDatabaseUrl = (text: string): Result.Result<DatabaseUrl, string> => {
  const scheme = /^(postgres|postgresql):\/\//i.exec(text)
  if (scheme === null) return Result.fail("it does not start with postgres:// or postgresql://")
  const rest = text.slice(scheme[0].length)
  const authorityEnd = rest.search(/[/?#]/)
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd)
  const tail = authorityEnd === -1 ? "" : rest.slice(authorityEnd)
  if (tail.includes("#"))
    return Result.fail("it has a fragment (#...); percent-encode a # in the password as %23")
  const at = authority.lastIndexOf("@")
  if (at === -1 && tail.includes("@")) {
    return Result.fail("the user or password holds a /, ? or #: percent-encode it (%2F, %3F, %23)")
  }
  const userinfo = at === -1 ? "" : authority.slice(0, at)
  const hostList = authority.slice(at + 1)
  if (userinfo.includes("@")) return Result.fail("the user or password holds an @: percent-encode it as %40")
  if (decode(userinfo) === undefined) return Result.fail("the user or password is not valid percent-encoding")

  const entries = hostList.split(",")
  const hosts: Array<DatabaseHost> = []
  for (const [index, entry] of entries.entries()) {
    const host = parseHost(entry, index, entries.length > 1)
    if (Result.isFailure(host)) return Result.fail(host.failure)
    hosts.push(host.success)
  }

  const queryStart = tail.indexOf("?")
  const path = queryStart === -1 ? tail : tail.slice(0, queryStart)
  const query = queryStart === -1 ? "" : tail.slice(queryStart + 1)
  const database = decode(path.replace(/^\//, ""))
  if (database === undefined) return Result.fail("the database name is not valid percent-encoding")
  if (database.includes("/")) return Result.fail(`the path names more than a database ("${database}")`)

  const params = new URLSearchParams(query)
  const attrs = params.getAll("target_session_attrs")
  if (attrs.length > 1) return Result.fail("target_session_attrs is given more than once")
  const targetSessionAttrs = TargetSessionAttrs.find((value) => value === attrs[0])
  if (attrs[0] !== undefined && targetSessionAttrs === undefined) {
    return Result.fail(`target_session_attrs "${attrs[0]}" is not one of ${TargetSessionAttrs.join(", ")}`)
  }
  return Result.succeed({
    scheme: scheme[1]!.toLowerCase(),
    userinfo,
    hosts,
    hostList,
    database,
    query,
    targetSessionAttrs,
  })
}

/** The URL of another database on the same servers, with the same user and parameters. */
export const withDatabase = (url: DatabaseUrl, database: string) =>
  `${url.scheme}://${url.userinfo === "" ? "" : `${url.userinfo}@`}${url.hostList}/${encodeURIComponent(database)}${url.query === "" ? "" : `?${url.query}`}`

/** Reads a URL the configuration already accepted; a malformed one is a bug of the caller. */
export const databaseUrl = (text: string) => {
  const parsed = parseDatabaseUrl(text)
  if (Result.isFailure(parsed)) throw new Error(`Malformed DATABASE_URL: ${parsed.failure}`)
  return parsed.success
}

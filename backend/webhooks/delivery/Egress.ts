import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from "node:dns"
import { readFileSync, statSync } from "node:fs"
import type { IncomingHttpHeaders } from "node:http"
import { BlockList, isIP, type LookupFunction } from "node:net"
import { createSecureContext, rootCertificates } from "node:tls"
import { Context, Effect, Layer, Option, Schedule } from "effect"
import { join } from "node:path"
import ipaddr from "ipaddr.js"
import { buildConnector, type Dispatcher, Pool } from "undici"
import { AppConfig } from "../../platform/Config.ts"
import { WebhookConfig } from "../Config.ts"

/**
 * Outbound HTTPS for deliveries: keep-alive connections per origin in each process (no TLS handshake per attempt), a deadline
 * covering connect, headers and body, no redirects followed, the extra CA of `WEBHOOK_EXTRA_CA_FILE` trusted
 * (and outside production the test receiver's CA, see `testReceiverCaFile`), and unless `WEBHOOK_ALLOW_PRIVATE_DESTINATIONS`, destinations resolving to internal addresses refused: the
 * address checked at resolution is the one connected to, so a second DNS answer cannot slip past the check.
 */

/** What came back from a destination, or why nothing did. */
export type PostResult =
  | {
      readonly _tag: "Response"
      readonly statusCode: number
      readonly retryAfter: string | undefined
      /** The first 4 KB of the body, as text. */
      readonly body: string
      readonly durationMs: number
    }
  | {
      readonly _tag: "NoResponse"
      readonly reason: string
      readonly durationMs: number
      /** Nothing came back before the deadline (the receiver may hold the connection open). */
      readonly timedOut?: boolean
    }

export const RESPONSE_BODY_LIMIT = 4096

const blocked = new BlockList()
for (const [network, prefix] of [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT (and some clouds' metadata, 100.100.100.200)
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata 169.254.169.254
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(network, prefix, "ipv4")
}
for (const [network, prefix] of [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["::", 96], // IPv4-compatible (deprecated)
  ["100::", 64], // discard
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local (AWS metadata fd00:ec2::254)
  ["64:ff9b:1::", 48], // local-use NAT64, whose embedded address may sit anywhere
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const) {
  blocked.addSubnet(network, prefix, "ipv6")
}

/**
 * The IPv4 addresses an IPv6 address carries, which is where a packet to it ends up: IPv4-mapped
 * (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`) and NAT64 (`64:ff9b::a.b.c.d`) in the last 32 bits,
 * 6to4 (`2002:aabb:ccdd::`) in bits 16-47, Teredo (`2001::/32`) its server in bits 32-63 and its client, inverted,
 * in the last 32.
 */
const embeddedIPv4 = (address: ipaddr.IPv6): ReadonlyArray<string> => {
  const bytes = address.toByteArray()
  const quad = (at: number, inverted = false) =>
    bytes
      .slice(at, at + 4)
      .map((b) => (inverted ? 255 - b : b))
      .join(".")
  switch (address.range()) {
    case "ipv4Mapped":
    case "rfc6145":
    case "rfc6052":
      return [quad(12)]
    case "6to4":
      return [quad(2)]
    case "teredo":
      return [quad(4), quad(12, true)]
    default:
      return []
  }
}

/**
 * Whether a destination may not be connected to: private, loopback, link-local, CGNAT, metadata, unspecified,
 * multicast or documentation, directly or through the IPv4 address an IPv6 one carries.
 */
export const isForbiddenAddress = (address: string): boolean => {
  const family = isIP(address)
  if (family === 4) return blocked.check(address, "ipv4")
  if (family !== 6) return true
  const v6 = ipaddr.IPv6.parse(address)
  if (blocked.check(new ipaddr.IPv6(v6.parts).toNormalizedString(), "ipv6")) return true
  return embeddedIPv4(v6).some((v4) => blocked.check(v4, "ipv4"))
}

/** `localhost` and its subdomains, in any case, with or without the root's trailing dot. */
export const isLocalhostName = (hostname: string) => {
  const name = hostname.toLowerCase().replace(/\.+$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}

export class DestinationRefused extends Error {
  override readonly name = "DestinationRefused"
}

const refusal = (host: string, address: string) =>
  new DestinationRefused(
    `Destination refused: ${host} resolves to ${address}, a private, loopback, link-local or metadata address`,
  )

/** DNS resolution that refuses the host if any of its addresses is internal, and hands back the addresses checked. */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  const resolved = (error: NodeJS.ErrnoException | null, addresses: Array<LookupAddress>) => {
    if (error) return callback(error, "", 0)
    const forbidden = addresses.find((a) => isForbiddenAddress(a.address))
    if (forbidden) return callback(refusal(hostname, forbidden.address), "", 0)
    if (options.all) return callback(null, addresses)
    const first = addresses[0]
    if (!first) return callback(new Error(`no address for ${hostname}`), "", 0)
    return callback(null, first.address, first.family)
  }
  const lookupOptions: LookupAllOptions = { all: true }
  if (options.family !== undefined) lookupOptions.family = options.family
  if (options.hints !== undefined) lookupOptions.hints = options.hints
  dnsLookup(hostname, lookupOptions, resolved)
}

/** The longest failure reason kept, in UTF-16 units: a certificate's names alone can run to kilobytes. */
export const FAILURE_REASON_LIMIT = 1000

/**
 * A failure's text as it is recorded and shown: control characters other than tab and newline become U+FFFD (a
 * receiver's certificate or answer can put a NUL in an error's message, which Postgres cannot store), and the
 * text is cut at `FAILURE_REASON_LIMIT`.
 */
export const readableReason = (text: string) => {
  const kept = text.length > FAILURE_REASON_LIMIT ? `${text.slice(0, FAILURE_REASON_LIMIT - 1)}…` : text
  let readable = ""
  for (const char of kept) {
    const code = char.charCodeAt(0)
    readable += (code < 0x20 && code !== 0x09 && code !== 0x0a) || code === 0x7f ? "\ufffd" : char
  }
  return readable
}

/** Why a request got no answer, in words an operator reads on the delivery record. */
export const describeFailure = (error: unknown): string => {
  const chain: Array<unknown> = []
  for (let e: unknown = error; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e)
  const refused = chain.find((e) => e instanceof DestinationRefused)
  if (refused instanceof DestinationRefused) return readableReason(refused.message)
  const first = chain[0]
  if (!(first instanceof Error)) return readableReason(`Request failed: ${String(error)}`)
  const code = (first as NodeJS.ErrnoException).code
  // undici checks what it parses with assertions: their text names its source, not the answer.
  if (code === "ERR_ASSERTION") return "Request failed: the HTTP client could not read the answer"
  return readableReason(
    `Request failed: ${first.message}${code && !first.message.includes(code) ? ` (${code})` : ""}`,
  )
}

/**
 * One request through undici's dispatch API: keeps the first 4 KB of the answer (a longer body is cut off
 * there, and its connection not reused), and one timer is the whole deadline, from its creation: a request still
 * waiting for a connection, connecting, sending or reading when it fires is aborted and recorded as unanswered.
 * A class, so that an attempt allocates one object rather than a closure per callback.
 */
class AttemptRequest implements Dispatcher.DispatchHandler {
  private readonly started = performance.now()
  private readonly timer: NodeJS.Timeout
  private done = false
  private controller: Dispatcher.DispatchController | undefined
  private statusCode = 0
  private retryAfter: string | undefined
  private readonly chunks: Array<Buffer> = []
  private size = 0
  private readonly timeoutMs: number
  private readonly onResult: (result: PostResult) => void

  constructor(timeoutMs: number, onResult: (result: PostResult) => void) {
    this.timeoutMs = timeoutMs
    this.onResult = onResult
    this.timer = setTimeout(() => this.expire(), timeoutMs)
  }

  private elapsed() {
    return Math.round(performance.now() - this.started)
  }

  private finish(result: PostResult) {
    if (this.done) return
    this.done = true
    clearTimeout(this.timer)
    this.onResult(result)
  }

  private expire() {
    this.finish({
      _tag: "NoResponse",
      reason: `No response within ${this.timeoutMs} ms`,
      durationMs: this.elapsed(),
      timedOut: true,
    })
    this.controller?.abort(new Error("deadline"))
  }

  private answered() {
    this.finish({
      _tag: "Response",
      statusCode: this.statusCode,
      retryAfter: this.retryAfter,
      body: Buffer.concat(this.chunks)
        .subarray(0, RESPONSE_BODY_LIMIT)
        .toString("utf8")
        .replaceAll("\u0000", ""),
      durationMs: this.elapsed(),
    })
  }

  /** Nobody waits for the result any more. */
  cancel() {
    this.done = true
    clearTimeout(this.timer)
    this.controller?.abort(new Error("interrupted"))
  }

  onRequestStart(controller: Dispatcher.DispatchController) {
    this.controller = controller
    if (this.done) controller.abort(new Error("deadline"))
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ) {
    this.statusCode = statusCode
    const value = headers["retry-after"]
    this.retryAfter = Array.isArray(value) ? value[0] : value
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer) {
    if (this.size >= RESPONSE_BODY_LIMIT) return
    this.chunks.push(chunk)
    this.size += chunk.length
    if (this.size >= RESPONSE_BODY_LIMIT) {
      this.answered()
      controller.abort(new Error("response body beyond the recorded limit"))
    }
  }

  onResponseEnd() {
    this.answered()
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error) {
    this.finish({ _tag: "NoResponse", reason: describeFailure(error), durationMs: this.elapsed() })
  }
}

/**
 * Where `webhooks test-receiver` keeps the CA that signs its certificates. Outside production the service trusts
 * it as soon as the file appears or changes (read again at most once a second, when a connection is made), so a
 * receiver started after the service needs no restart.
 */
export const testReceiverCaFile = (dataDir: string) => join(dataDir, "test-receiver", "ca.pem")

const RELOAD_CHECK_MS = 1000

/** The PEM in `file` as it is now, looked at no more than once a second; undefined while there is none. */
const watchedPem = (file: string) => {
  let checkedAt = Number.NEGATIVE_INFINITY
  let modifiedAt: number | undefined
  let pem: string | undefined
  return () => {
    const now = performance.now()
    if (now - checkedAt < RELOAD_CHECK_MS) return pem
    checkedAt = now
    let modified: number | undefined
    try {
      modified = statSync(file).mtimeMs
    } catch {
      modified = undefined
    }
    if (modified !== modifiedAt) {
      modifiedAt = modified
      try {
        pem = modified === undefined ? undefined : readFileSync(file, "utf8")
      } catch {
        pem = undefined
      }
    }
    return pem
  }
}

/**
 * Connections (and so requests, one at a time on each) open at once to one origin from one process. Requests
 * beyond them wait in the origin's pool, their deadline running.
 */
export const ORIGIN_CONNECTIONS = 64

/** How often the pools holding neither a connection nor a request are closed and forgotten. */
const IDLE_POOL_SWEEP = "1 minute"

/**
 * The connection pools of the origins requests go to: one per origin, made on its first request and kept while it
 * holds a connection or a request (`sweep` closes the others). Not undici's `Agent`: it closes an origin's pool as
 * soon as the pool's connections are all down at once, as when every request at a receiver that never answers is
 * aborted at its deadline, and makes a new pool for the next request while the old one still sends the requests
 * queued in it, so an origin could have several times its connections open.
 */
class OriginPools {
  private readonly pools = new Map<string, Pool>()
  private readonly options: Pool.Options

  constructor(options: Pool.Options) {
    this.options = options
  }

  of(origin: string): Pool {
    let pool = this.pools.get(origin)
    if (pool === undefined) {
      pool = new Pool(origin, this.options)
      this.pools.set(origin, pool)
    }
    return pool
  }

  /** Closes the pools with no connection and no request: a request after this gets a new pool. */
  sweep() {
    for (const [origin, pool] of this.pools) {
      const stats = pool.stats
      if (stats.connected === 0 && stats.size === 0) {
        this.pools.delete(origin)
        pool.close().catch(() => undefined)
      }
    }
  }

  close() {
    const closing = [...this.pools.values()].map((pool) => pool.close().catch(() => undefined))
    this.pools.clear()
    return Promise.all(closing)
  }
}

export interface EgressShape {
  /** POSTs `body` to `url` with `headers`; never fails: a refusal or an error is a `NoResponse`. */
  readonly post: (
    url: string,
    headers: Readonly<Record<string, string>>,
    body: Uint8Array,
  ) => Effect.Effect<PostResult>
}

export class Egress extends Context.Service<Egress, EgressShape>()("partner-service/webhooks/Egress") {
  static readonly layer = Layer.effect(
    Egress,
    Effect.gen(function* () {
      const appConfig = yield* AppConfig
      const config = yield* WebhookConfig
      const timeoutMs = config.timeoutMs
      const extraCa = Option.match(config.extraCaFile, {
        onNone: () => [],
        onSome: (file) => [readFileSync(file, "utf8")],
      })
      const receiverCa =
        appConfig.serviceEnv === "production"
          ? () => undefined
          : watchedPem(testReceiverCaFile(appConfig.dataDir))
      // One connector per set of trusted CAs: a secure context per connection would parse every root certificate again.
      const connectorFor = (cas: ReadonlyArray<string>) =>
        buildConnector({
          timeout: timeoutMs,
          ...(cas.length > 0
            ? { secureContext: createSecureContext({ ca: [...rootCertificates, ...cas] }) }
            : {}),
          ...(config.allowPrivateDestinations ? {} : { lookup: guardedLookup }),
        })
      let trusted:
        { readonly receiverCa: string | undefined; readonly connector: buildConnector.connector } | undefined
      const connect: buildConnector.connector = (options, callback) => {
        const receiver = receiverCa()
        if (trusted === undefined || receiver !== trusted.receiverCa) {
          trusted = {
            receiverCa: receiver,
            connector: connectorFor(receiver === undefined ? extraCa : [...extraCa, receiver]),
          }
        }
        return trusted.connector(options, callback)
      }
      const pools = yield* Effect.acquireRelease(
        Effect.sync(
          () =>
            new OriginPools({
              keepAliveTimeout: 30_000,
              headersTimeout: timeoutMs,
              bodyTimeout: timeoutMs,
              connections: ORIGIN_CONNECTIONS,
              connect,
            }),
        ),
        (p) => Effect.promise(() => p.close()).pipe(Effect.timeout("5 seconds"), Effect.ignore),
      )
      yield* Effect.forkScoped(
        Effect.sync(() => pools.sweep()).pipe(Effect.repeat(Schedule.spaced(IDLE_POOL_SWEEP))),
      )

      const send = (target: URL, headers: Readonly<Record<string, string>>, body: Uint8Array) =>
        Effect.callback<PostResult>((resume) => {
          const request = new AttemptRequest(timeoutMs, (result) => resume(Effect.succeed(result)))
          try {
            pools.of(target.origin).dispatch(
              {
                path: `${target.pathname}${target.search}`,
                method: "POST",
                headers,
                body,
              },
              request,
            )
          } catch (error) {
            // Headers undici refuses (a custom header's value, say), or the pool closing.
            request.onResponseError(undefined, error as Error)
          }
          // An interrupted attempt (the process stopping) lets its request go.
          return Effect.sync(() => request.cancel())
        })

      /** A request refused before anything was sent. */
      const unsent = (reason: string) =>
        Effect.succeed<PostResult>({ _tag: "NoResponse", reason, durationMs: 0 })

      const post = (url: string, headers: Readonly<Record<string, string>>, body: Uint8Array) =>
        Effect.suspend((): Effect.Effect<PostResult> => {
          let target: URL
          try {
            target = new URL(url)
          } catch {
            return unsent("Destination url is not a valid URL")
          }
          if (target.protocol !== "https:") {
            return unsent("Destination url must use HTTPS")
          }
          // An address literal is connected to without any lookup, and a localhost name needs none: check here.
          const literal = target.hostname.replace(/^\[|\]$/g, "")
          if (!config.allowPrivateDestinations && isIP(literal) !== 0 && isForbiddenAddress(literal)) {
            return unsent(refusal(literal, literal).message)
          }
          if (!config.allowPrivateDestinations && isLocalhostName(literal)) {
            return unsent(`Destination refused: ${literal} is a localhost name`)
          }
          return send(target, headers, body)
        })

      return Egress.of({ post })
    }),
  ).pipe(Layer.provide(WebhookConfig.layer))
}

import { randomUUID } from "node:crypto"
import { createServer, type Server, STATUS_CODES } from "node:http"
import type { AddressInfo } from "node:net"
import { Cause, Context, Effect, Layer, LogLevel, Option, Redacted, Schema } from "effect"
import { H3, type H3Event, type HTTPMethod } from "h3"
import { toNodeHandler } from "h3/node"
import { FastResponse } from "srvx/node"
import { clientAddress } from "./ClientAddress.ts"
import { AppConfig, type HttpRole } from "./Config.ts"
import { constantTimeEqual } from "./Crypto.ts"
import { Db } from "./Db.ts"
import { hasControlCharacter, hasLoneSurrogate } from "./Text.ts"
import { Nats } from "./Nats.ts"
import { metrics, registry } from "./Observability.ts"
import { unavailableIn } from "./Unavailable.ts"

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", { message: Schema.String }) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { message: Schema.String }) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { message: Schema.String }) {}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  limitBytes: Schema.Number,
}) {}
/** 422, with field-level detail when given: `{"status_code":422,"error":message,[resource]:{field:message}}`. */
export class Unprocessable extends Schema.TaggedError<Unprocessable>()("Unprocessable", {
  message: Schema.String,
  resource: Schema.optional(Schema.String),
  fields: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)),
}) {}
/** Gateway authentication failure: the body is exactly `{"message":"Unauthorized"}`. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {}) {}
/** Gateway permission failure: the body is exactly `{"message":"Forbidden"}`. */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {}) {}
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  retryAfterSeconds: Schema.Number,
}) {}

/** A dependency the request needs is down; nothing was accepted, the client should retry. */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: Schema.String,
  retryAfterSeconds: Schema.Number,
}) {}

export type ApiError =
  | ServiceUnavailable
  | BadRequest
  | NotFound
  | Conflict
  | PayloadTooLarge
  | Unprocessable
  | Unauthorized
  | Forbidden
  | TooManyRequests

/** Gateway authentication failure body, as `errorResponse` writes it and the reference shows it. */
export const UnauthorizedBody = Schema.Struct({ message: Schema.Literal("Unauthorized") }).annotate({
  identifier: "Unauthorized",
  description: "Gateway authentication failure: nothing but `message`.",
})

/** Gateway permission failure body, as `errorResponse` writes it and the reference shows it. */
export const ForbiddenBody = Schema.Struct({ message: Schema.Literal("Forbidden") }).annotate({
  identifier: "Forbidden",
  description: "Gateway permission failure: nothing but `message`.",
})

/** Endpoint error body; a 422 adds one key named for the resource with a message per field. */
export const EndpointError = Schema.Struct({
  status_code: Schema.Int.annotate({ description: "The HTTP status, repeated." }),
  error: Schema.String.annotate({ description: "What went wrong, as a sentence." }),
}).annotate({
  identifier: "EndpointError",
  description:
    "Endpoint error. A validation failure (422) carries two more keys: one named for the resource (for example " +
    "`prospect`) whose object maps each field to its message, as the published API has it, and `errors`, which " +
    'maps each field to an array of messages: `{"status_code":422,"error":"Prospect invalid.",' +
    '"prospect":{"phone":"Phone is not valid"},"errors":{"phone":["Phone is not valid"]}}`.',
})

/**
 * A JSON response. srvx's `FastResponse` is a `Response` that the Node adapter writes straight from its string,
 * without building the web body stream a native one needs: most answers are small, and that stream costs more
 * than writing them.
 */
export const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new FastResponse(JSON.stringify(body), {
    status,
    statusText: STATUS_CODES[status] ?? "",
    headers: { "content-type": "application/json", ...headers },
  })

const endpointError = (
  status: number,
  error: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) => json(status, { status_code: status, error, ...extra }, headers)

/** The spec's `errors`: each field's messages as an array, beside the published per-resource object. */
const fieldErrors = (fields: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(fields).map(([field, message]) => [field, Array.isArray(message) ? message : [message]]),
  )

/** The one place where failures become the contract's error bodies. */
export const errorResponse = (error: ApiError): Response => {
  switch (error._tag) {
    case "BadRequest":
      return endpointError(400, error.message)
    case "NotFound":
      return endpointError(404, error.message)
    case "Conflict":
      return endpointError(409, error.message)
    case "PayloadTooLarge":
      // The rest of the body is left unread, so the connection cannot carry another request.
      return endpointError(
        413,
        `Request body is larger than the limit of ${error.limitBytes} bytes.`,
        {},
        { connection: "close" },
      )
    case "Unprocessable":
      return endpointError(
        422,
        error.message,
        error.resource
          ? { [error.resource]: error.fields ?? {}, errors: fieldErrors(error.fields ?? {}) }
          : {},
      )
    case "Unauthorized":
      return json(401, { message: "Unauthorized" })
    case "Forbidden":
      return json(403, { message: "Forbidden" })
    case "ServiceUnavailable":
      return endpointError(503, error.message, {}, { "retry-after": String(error.retryAfterSeconds) })
    case "TooManyRequests":
      return endpointError(429, "Too many requests.", {}, { "retry-after": String(error.retryAfterSeconds) })
  }
}

/**
 * A request that died: a 503 with `Retry-After` when a dependency did not answer (expected, logged as a warning),
 * otherwise a logged 500.
 */
const failedResponse = (cause: Cause.Cause<unknown>) => {
  const unavailable = unavailableIn(cause)
  return unavailable
    ? Effect.logWarning("request failed: dependency unavailable").pipe(
        Effect.annotateLogs({ dependency: unavailable.dependency, reason: unavailable.reason }),
        Effect.as(errorResponse(dependencyUnavailable)),
      )
    : Effect.logError("request failed").pipe(
        Effect.annotateLogs({ cause: Cause.pretty(cause) }),
        Effect.as(endpointError(500, "Internal server error.")),
      )
}

const dependencyUnavailable = new ServiceUnavailable({
  message: "The service is briefly unavailable. Retry the request shortly.",
  retryAfterSeconds: 2,
})

/** Who made an authenticated request: filled by the gateway's guard on every non-public route. */
export interface Caller {
  readonly clientId: string
  readonly scopes: ReadonlySet<string>
  /** The source code an ingestion client emits events for. */
  readonly source?: string | null
}

export interface HttpRequest {
  readonly method: string
  readonly path: string
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  readonly headers: Headers
  readonly requestId: string
  /**
   * The client's address (an IPv4-mapped IPv6 address as plain IPv4; behind a trusted proxy, from
   * `X-Forwarded-For`: `clientAddress`); empty when unknown.
   */
  readonly remoteAddress: string
  /** The raw body, at most `HTTP_MAX_BODY_BYTES`; readable once. */
  readonly bytes: Effect.Effect<Uint8Array, PayloadTooLarge | BadRequest>
  /** The body parsed as JSON. */
  readonly json: Effect.Effect<unknown, PayloadTooLarge | BadRequest>
  /** Undefined only on public routes. */
  readonly caller: Caller | undefined
}

/** What the reference documents about a route; one schema per wire shape, the same that decodes/encodes. */
export interface RouteDoc {
  readonly summary: string
  readonly description?: string
  readonly tag: string
  readonly body?: Schema.Top
  readonly responses: ReadonlyArray<{
    readonly status: number
    readonly description: string
    readonly schema?: Schema.Top
  }>
}

export interface Route<R = never> {
  readonly method: HTTPMethod
  /** h3 route pattern, e.g. `/partners/:owner_slug/units`; `:owner_slug` and `:provider` are checked by the guard. */
  readonly path: string
  /**
   * `public` (token, docs, health) or the OAuth scope a token must carry; `ownerFromQuery` for a route that
   * names its owner in the `owner_slug` query parameter rather than the path.
   */
  readonly access: "public" | { readonly scope: string; readonly ownerFromQuery?: true }
  /** Present on routes that appear in the gateway's OpenAPI document. */
  readonly doc?: RouteDoc
  /**
   * How a public route answers a path or query the gateway refuses (a control character), when not with the
   * gateway's 404/400: the renter's pages show their neutral page, `/token` its OAuth error.
   */
  readonly answerRefusedAddress?: (refusal: NotFound | BadRequest) => Effect.Effect<Response, never, R>
  readonly handle: (request: HttpRequest) => Effect.Effect<Response, ApiError, R>
}

/**
 * Authenticates a request for a non-public route: token, scope, then the owner or provider in the path.
 * Fails with Unauthorized (401), Forbidden (403), NotFound (unknown slug) or TooManyRequests.
 */
export interface Guard<R = never> {
  readonly authenticate: (
    route: Route<unknown>,
    request: Omit<HttpRequest, "caller">,
  ) => Effect.Effect<Caller, Unauthorized | Forbidden | NotFound | TooManyRequests, R>
}

/** The port each gateway (and the metrics port) bound, for logs, tests and links when a port of 0 was configured. */
export class ListeningPorts extends Context.Service<ListeningPorts, Map<HttpRole | "metrics", number>>()(
  "partner-service/platform/ListeningPorts",
) {
  static readonly layer = Layer.sync(ListeningPorts, () => new Map())
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
const decoder = new TextDecoder()

const unreadable = () => new BadRequest({ message: "Request body could not be read." })

/**
 * The body, at most `limitBytes`, read from Node's own request stream with plain listeners: srvx would otherwise
 * wrap it in a web stream per request, and even an async iterator over the Node stream costs more than the rest
 * of reading it. A body over the limit is left unread (the 413 closes the connection).
 */
const readBody = (request: H3Event["req"], limitBytes: number) =>
  Effect.suspend(() => {
    if (Number(request.headers.get("content-length") ?? "0") > limitBytes) {
      return Effect.fail(new PayloadTooLarge({ limitBytes }))
    }
    // Every gateway is a Node server; a body already read cannot be read again.
    const stream = request.runtime?.node?.req
    if (stream === undefined || stream.readableEnded) return Effect.fail(unreadable())
    return Effect.callback<Uint8Array, PayloadTooLarge | BadRequest>((resume) => {
      const chunks: Array<Buffer> = []
      let size = 0
      const detach = () =>
        void stream.off("data", onData).off("end", onEnd).off("error", onFailure).off("close", onFailure)
      const finish = (outcome: Effect.Effect<Uint8Array, PayloadTooLarge | BadRequest>) => {
        detach()
        resume(outcome)
      }
      const onData = (chunk: Buffer) => {
        size += chunk.byteLength
        if (size <= limitBytes) return void chunks.push(chunk)
        stream.pause()
        finish(Effect.fail(new PayloadTooLarge({ limitBytes })))
      }
      const onEnd = () => finish(Effect.succeed(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
      const onFailure = () => finish(Effect.fail(unreadable()))
      stream.on("data", onData).once("end", onEnd).once("error", onFailure).once("close", onFailure)
      return Effect.sync(detach)
    })
  })

/** Deepest nesting of arrays and objects a JSON body may have: far beyond any contract shape. */
export const MAX_JSON_DEPTH = 64

/**
 * Whether JSON `text` nests arrays and objects deeper than `MAX_JSON_DEPTH`, told by one pass over its brackets
 * (skipping strings) before anything recursive walks the parsed value.
 */
export const nestsTooDeep = (text: string) => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x22) {
      for (i++; i < text.length; i++) {
        const inString = text.charCodeAt(i)
        if (inString === 0x5c) i++
        else if (inString === 0x22) break
      }
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true
    } else if (code === 0x5d || code === 0x7d) {
      depth--
    }
  }
  return false
}

export const TOO_DEEP_MESSAGE = `Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`

/**
 * Path parameters as the partner wrote them (`a%20b` is `a b`); h3 leaves them encoded. A malformed escape
 * keeps its raw form, which names nothing, so the route answers 404.
 */
const decodedParams = (params: Readonly<Record<string, string>>) =>
  Object.fromEntries(
    Object.entries(params).map(([name, value]) => {
      try {
        return [name, decodeURIComponent(value)]
      } catch {
        return [name, value]
      }
    }),
  )

export const LONE_SURROGATE_MESSAGE =
  "Request body holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape), which is not text."

/** Only a `\uD800`-`\uDFFF` escape makes a lone surrogate: a body without one needs no walk. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

/** Whether a parsed JSON value holds a lone surrogate in any string or key (its depth is already bounded). */
const holdsLoneSurrogate = (value: unknown): boolean => {
  if (typeof value === "string") return hasLoneSurrogate(value)
  if (typeof value !== "object" || value === null) return false
  if (Array.isArray(value)) return value.some(holdsLoneSurrogate)
  return Object.entries(value).some(([key, inner]) => hasLoneSurrogate(key) || holdsLoneSurrogate(inner))
}

/**
 * JSON text as a value, for every JSON body any gateway or the console API reads: nesting deeper than
 * `MAX_JSON_DEPTH`, malformed JSON and a lone surrogate anywhere are each a 400, so no route, schema or query sees
 * text that Postgres would store altered. Length and control characters are each field's own check.
 */
export const parseJsonText = (text: string): Effect.Effect<unknown, BadRequest> =>
  Effect.suspend(() => {
    if (nestsTooDeep(text)) return Effect.fail(new BadRequest({ message: TOO_DEEP_MESSAGE }))
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return Effect.fail(new BadRequest({ message: "Request body is not valid JSON." }))
    }
    return SURROGATE_ESCAPE.test(text) && holdsLoneSurrogate(value)
      ? Effect.fail(new BadRequest({ message: LONE_SURROGATE_MESSAGE }))
      : Effect.succeed(value)
  })

const parseJson = (bytes: Uint8Array) => Effect.suspend(() => parseJsonText(decoder.decode(bytes)))

/**
 * A path segment holding a control character or a lone surrogate names nothing (404), and no query parameter
 * means one (400): refused before anything looks them up (Postgres cannot even compare U+0000).
 */
const refusedAddress = (request: Omit<HttpRequest, "caller">): NotFound | BadRequest | undefined => {
  const unsafe = (text: string) => hasControlCharacter(text) || hasLoneSurrogate(text)
  if (Object.values(request.params).some(unsafe)) return new NotFound({ message: "Not found." })
  for (const [name, value] of request.query) {
    if (unsafe(name) || unsafe(value)) {
      return new BadRequest({ message: "A query parameter holds a control character." })
    }
  }
  return undefined
}

const readiness = Effect.gen(function* () {
  const db = yield* Db
  const nats = yield* Nats
  const check = (probe: Effect.Effect<void>) =>
    probe.pipe(
      Effect.timeout("2 seconds"),
      Effect.as("ok"),
      Effect.catchCause(() => Effect.succeed("unreachable")),
    )
  const [postgres, natsState] = yield* Effect.all([check(db.ping), check(nats.ping)], { concurrency: 2 })
  const ready = postgres === "ok" && natsState === "ok"
  return json(ready ? 200 : 503, {
    status: ready ? "ready" : "not ready",
    checks: { postgres, nats: natsState },
  })
})

const healthRoutes: ReadonlyArray<Route<Db | Nats>> = [
  {
    method: "GET",
    path: "/healthz",
    access: "public",
    handle: () => Effect.succeed(json(200, { status: "ok" })),
  },
  { method: "GET", path: "/readyz", access: "public", handle: () => readiness },
]

/** Whether `authorization` carries the metrics token (always, when none is configured). */
const metricsAllowed = (token: Option.Option<Redacted.Redacted<string>>, authorization: string | null) =>
  Option.isNone(token) ||
  constantTimeEqual(
    /^Bearer (\S+)$/i.exec(authorization?.trim() ?? "")?.[1] ?? "",
    Redacted.value(token.value),
  )

const metricsRoute: Route<AppConfig> = {
  method: "GET",
  path: "/metrics",
  access: "public",
  handle: (request) =>
    Effect.gen(function* () {
      if (!metricsAllowed((yield* AppConfig).metricsToken, request.headers.get("authorization"))) {
        return yield* new Unauthorized()
      }
      const text = yield* Effect.promise(() => registry.metrics())
      return new Response(text, { headers: { "content-type": registry.contentType } })
    }),
}

/**
 * `/metrics` alone on `METRICS_PORT`, for processes without the console (workers): an internal port, behind
 * `METRICS_TOKEN` when set. Anything else there is a 404.
 */
export const metricsLayer = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const ports = yield* ListeningPorts
    if (Option.isNone(config.metricsPort)) return
    const listenOn = config.metricsPort.value
    const server = yield* Effect.acquireRelease(
      Effect.callback<Server>((resume) => {
        const server = createServer((req, res) => {
          const reply = (status: number, body: string, contentType = "application/json") =>
            void res.writeHead(status, { "content-type": contentType }).end(body)
          if (req.method !== "GET" || req.url?.split("?")[0] !== "/metrics") {
            return reply(404, JSON.stringify({ status_code: 404, error: "Not found." }))
          }
          if (!metricsAllowed(config.metricsToken, req.headers.authorization ?? null)) {
            return reply(401, JSON.stringify({ message: "Unauthorized" }))
          }
          registry.metrics().then(
            (text) => reply(200, text, registry.contentType),
            () => reply(500, JSON.stringify({ status_code: 500, error: "Internal server error." })),
          )
        })
        server.once("error", (error) => resume(Effect.die(error)))
        server.listen(listenOn, "0.0.0.0", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        }),
    )
    const port = (server.address() as AddressInfo).port
    ports.set("metrics", port)
    yield* Effect.logInfo("listening").pipe(Effect.annotateLogs({ role: "metrics", port }))
  }),
)

/**
 * One h3 app on the role's port: health and readiness (and metrics on the console's port only: never on a public
 * gateway), then `routes`, then a JSON 404. A non-public
 * route runs only after `guard` accepted the caller (without a guard it is refused). Every response carries
 * `X-Request-Id`, every log line of the request is annotated with it, bad input never becomes a 500, and a
 * defect becomes a logged 500 in the contract's shape. The server closes when the layer's scope does.
 */
export const gatewayLayer = <R, G = never>(
  role: HttpRole,
  routes: ReadonlyArray<Route<R>>,
  guard?: Guard<G>,
) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const ports = yield* ListeningPorts
      const context = yield* Effect.context<R | G | Db | Nats | AppConfig>()
      // Requests run with this context, so its minimum level decides once whether request lines are written.
      const logRequests = yield* LogLevel.isEnabled("Debug")
      const authenticate = (
        route: Route<unknown>,
        request: Omit<HttpRequest, "caller">,
      ): Effect.Effect<Caller | undefined, Unauthorized | Forbidden | NotFound | TooManyRequests, G> =>
        route.access === "public"
          ? Effect.succeed(undefined)
          : guard
            ? guard.authenticate(route, request)
            : Effect.fail(new Unauthorized())
      // Errors h3 raises before routing (a malformed percent-encoded path) get the contract's shape too.
      const app = new H3({
        onError: (error) => {
          const status = error.status >= 400 && error.status < 500 ? error.status : 500
          const response = endpointError(status, STATUS_CODES[status] ? `${STATUS_CODES[status]}.` : "Error.")
          response.headers.set("x-request-id", randomUUID())
          return response
        },
      })

      const run = (route: Route<R | Db | Nats | AppConfig>, event: H3Event) => {
        const incoming = event.req.headers.get("x-request-id")
        const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID()
        const bytes = readBody(event.req, config.httpMaxBodyBytes)
        const request: Omit<HttpRequest, "caller"> = {
          method: event.req.method,
          path: event.url.pathname,
          params: decodedParams(event.context.params ?? {}),
          query: event.url.searchParams,
          headers: event.req.headers,
          requestId,
          remoteAddress: clientAddress(
            event.runtime?.node?.req.socket.remoteAddress ?? "",
            event.req.headers.get("x-forwarded-for"),
            config.trustedProxies,
          ),
          bytes,
          json: Effect.flatMap(bytes, parseJson),
        }
        const started = performance.now()
        const refusal = refusedAddress(request)
        const answer: Effect.Effect<Response, ApiError, R | G | Db | Nats | AppConfig> =
          refusal === undefined
            ? Effect.flatMap(authenticate(route as Route<unknown>, request), (caller) =>
                route.handle({ ...request, caller }),
              )
            : route.answerRefusedAddress
              ? route.answerRefusedAddress(refusal)
              : Effect.fail(refusal)
        const respond = answer.pipe(
          Effect.catch((error) => Effect.succeed(errorResponse(error))),
          Effect.catchCause(failedResponse),
          Effect.tap((response) => {
            // Node's response takes it and srvx merges it in; `response.headers` would build a Headers per request.
            const nodeResponse = event.runtime?.node?.res
            if (nodeResponse === undefined) response.headers.set("x-request-id", requestId)
            else nodeResponse.setHeader("x-request-id", requestId)
            const seconds = (performance.now() - started) / 1000
            metrics.httpRequests.inc({ role, method: request.method, status: String(response.status) })
            metrics.httpDuration.observe({ role, method: request.method }, seconds)
            return logRequests
              ? Effect.logDebug("request").pipe(
                  Effect.annotateLogs({ status: response.status, duration_ms: Math.round(seconds * 1000) }),
                )
              : Effect.void
          }),
          Effect.annotateLogs({ role, request_id: requestId, method: request.method, path: request.path }),
        )
        return Effect.runPromiseWith(context)(respond)
      }

      const observability = role === "console" ? [...healthRoutes, metricsRoute] : healthRoutes
      for (const route of [...observability, ...routes] as ReadonlyArray<Route<R | Db | Nats | AppConfig>>) {
        app.on(route.method, route.path, (event) => run(route, event))
      }
      const notFound: Route = {
        method: "GET",
        path: "/**",
        access: "public",
        handle: () => Effect.fail(new NotFound({ message: "Not found." })),
      }
      app.all("/**", (event) => run(notFound, event))

      const server = yield* Effect.acquireRelease(
        Effect.callback<Server>((resume) => {
          const server = createServer(toNodeHandler(app))
          server.keepAliveTimeout = 65_000
          server.once("error", (error) => resume(Effect.die(error)))
          server.listen(config.ports[role], "0.0.0.0", () => resume(Effect.succeed(server)))
        }),
        (server) =>
          Effect.callback<void>((resume) => {
            server.close(() => resume(Effect.void))
            server.closeIdleConnections()
            // Requests still running after 5 s are cut off so shutdown stays within its 10 s budget.
            setTimeout(() => server.closeAllConnections(), 5000).unref()
          }),
      )
      const port = (server.address() as AddressInfo).port
      ports.set(role, port)
      yield* Effect.logInfo("listening").pipe(Effect.annotateLogs({ role, port }))
    }),
  )

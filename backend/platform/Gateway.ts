import { randomUUID } from "node:crypto"
import { createServer, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { AddressInfo } from "node:net"
import type { Duplex } from "node:stream"
import { Cause, Effect, Layer, LogLevel, Option, Redacted } from "effect"
import { H3, type H3Event } from "h3"
import { toNodeHandler } from "h3/node"
import { clientAddress } from "./ClientAddress.ts"
import { AppConfig, type HttpRole } from "./Config.ts"
import { constantTimeEqual } from "./Crypto.ts"
import { Db } from "./Db.ts"
import {
  type ApiError,
  BadRequest,
  type Caller,
  decodeUtf8,
  endpointError,
  errorResponse,
  type Forbidden,
  type Guard,
  type HttpRequest,
  json,
  jsonBody,
  ListeningPorts,
  NotFound,
  PayloadTooLarge,
  type Route,
  ServiceUnavailable,
  type TooManyRequests,
  Unauthorized,
} from "./Http.ts"
import { Nats } from "./Nats.ts"
import { metrics, registry } from "./Observability.ts"
import { processMetrics } from "./Processes.ts"
import { hasControlCharacter, hasLoneSurrogate } from "./Text.ts"
import { Traced } from "./Tracing.ts"
import { unavailableIn } from "./Unavailable.ts"

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

/** The answer to a request whose client has gone: nobody reads it. */
const abandoned = () => new Response(null, { status: 499 })

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

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

/** An error body's sentence for a bare status: "Bad Request." */
const statusMessage = (status: number) => (STATUS_CODES[status] ? `${STATUS_CODES[status]}.` : "Error.")

/** The status Node's own answer gives each parser refusal it names; any other is a 400. */
const CLIENT_ERROR_STATUS: Readonly<Record<string, number>> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
}

/**
 * What Node's HTTP parser refuses before any route sees it (a raw non-ASCII byte in the path, an unknown method,
 * headers over Node's limit, a request too slow) gets the contract's error body rather than Node's empty one, and
 * the connection closes: the parser cannot tell where a next request would begin. As in Node's own answer,
 * nothing is written to a socket the peer reset or that is already closing, nor into a response already begun.
 */
const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex) => {
  const inFlight = (socket as Duplex & { readonly _httpMessage?: ServerResponse | null })._httpMessage
  if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) return void socket.destroy()
  const status = CLIENT_ERROR_STATUS[error.code ?? ""] ?? 400
  const body = JSON.stringify({ status_code: status, error: statusMessage(status) })
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    "content-type: application/json",
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${randomUUID()}`,
    "connection: close",
  ]
  // Ending, not destroying, lets the client read the answer first. One that never closes its side is cut off by
  // the server's request timeout, which comes back here with the socket no longer writable.
  socket.end(`${head.join("\r\n")}\r\n\r\n${body}`)
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
      const text = yield* Effect.promise(processMetrics)
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
          processMetrics().then(
            (text) => reply(200, text, registry.contentType),
            () => reply(500, JSON.stringify({ status_code: 500, error: "Internal server error." })),
          )
        })
        server.on("clientError", answerClientError)
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

/** `/partners/:owner_slug/prospects` as OpenTelemetry names a route: `/partners/{owner_slug}/prospects`. */
const routeTemplate = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")

/**
 * The request's server span, named by its route (`POST /partners/{owner_slug}/prospects`), so one route's
 * requests group together whatever their path. Each begins a trace: a caller's `traceparent` is not trusted at a
 * public gateway.
 */
const serverSpan = <R>(
  routePath: string,
  request: Omit<HttpRequest, "caller">,
  respond: Effect.Effect<Response, never, R>,
) => {
  const template = routeTemplate(routePath)
  return respond.pipe(
    Effect.tap((response) => Effect.annotateCurrentSpan("http.response.status_code", response.status)),
    Effect.withSpan(`${request.method} ${template}`, {
      kind: "server",
      root: true,
      attributes: {
        "http.request.method": request.method,
        "http.route": template,
        "url.path": request.path,
        "http.request.id": request.requestId,
      },
    }),
  )
}

/**
 * One h3 app on the role's port: health and readiness (and metrics on the console's port only: never on a public
 * gateway), then `routes`, then a JSON 404. A non-public
 * route runs only after `guard` accepted the caller (without a guard it is refused). Every response carries
 * `X-Request-Id`, every log line of the request is annotated with it, bad input never becomes a 500, and a
 * defect becomes a logged 500 in the contract's shape. The server closes when the layer's scope does. A role
 * whose port is a setting of its own context (the portal's) passes it as `givenPort`.
 */
export const gatewayLayer = <R, G = never>(
  role: HttpRole,
  routes: ReadonlyArray<Route<R>>,
  guard?: Guard<G>,
  givenPort?: number,
) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const ports = yield* ListeningPorts
      const context = yield* Effect.context<R | G | Db | Nats | AppConfig>()
      // Requests run with this context, so its minimum level decides once whether request lines are written.
      const logRequests = yield* LogLevel.isEnabled("Debug")
      const traced = yield* Traced
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
          const response = endpointError(status, statusMessage(status))
          response.headers.set("x-request-id", randomUUID())
          return response
        },
      })

      const run = (route: Route<R | Db | Nats | AppConfig>, event: H3Event) => {
        const incoming = event.req.headers.get("x-request-id")
        const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID()
        const bytes = readBody(event.req, config.httpMaxBodyBytes)
        const text = Effect.flatMap(bytes, decodeUtf8)
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
          text,
          json: Effect.flatMap(text, (body) => jsonBody(event.req.headers, body)),
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
        // A client that has gone interrupts the request: its place in a queue and its count towards a per-source
        // cap are given back at once, and nothing is recorded for it (a transaction under way rolls back; what
        // committed stays). Work that must finish once begun is uninterruptible where it is done.
        const signal = event.req.signal
        return Effect.runPromiseWith(context)(traced ? serverSpan(route.path, request, respond) : respond, {
          signal,
        }).catch((error: unknown) => {
          if (!signal.aborted) throw error
          metrics.httpRequests.inc({ role, method: request.method, status: "499" })
          return abandoned()
        })
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

      const listenPort = givenPort ?? (role === "portal" ? undefined : config.ports[role])
      if (listenPort === undefined)
        return yield* Effect.die(new Error(`no port given for the ${role} gateway`))
      const server = yield* Effect.acquireRelease(
        Effect.callback<Server>((resume) => {
          const server = createServer(toNodeHandler(app))
          server.keepAliveTimeout = 65_000
          server.on("clientError", answerClientError)
          server.once("error", (error) => resume(Effect.die(error)))
          server.listen(listenPort, "0.0.0.0", () => resume(Effect.succeed(server)))
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

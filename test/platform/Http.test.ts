import net from "node:net"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Logger, References } from "effect"
import postgres from "postgres"
import { appLayer } from "../../backend/App.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { gatewayLayer } from "../../backend/platform/Gateway.ts"
import {
  type ApiError,
  Conflict,
  Forbidden,
  json,
  ListeningPorts,
  type Route,
  TooManyRequests,
  Unauthorized,
  Unprocessable,
} from "../../backend/platform/Http.ts"
import { databaseFailure } from "../../backend/platform/Unavailable.ts"
import { isolatedEnv, isolationLayer, testPlatform } from "../support/TestPlatform.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const NOT_FOUND = `{"status_code":404,"error":"Not found."}`

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const request = (port: number, path: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, init)
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** The contract's 404 body, but a GET on the renter's host has a page in its style, for a person who followed a link. */
const assertNotFound = (
  role: string,
  answer: { status: number; text: string; headers: Headers },
  method: string = "GET",
) => {
  assert.strictEqual(answer.status, 404, role)
  if (role !== "enrollment" || method !== "GET") return assert.strictEqual(answer.text, NOT_FOUND, role)
  assert.match(answer.headers.get("content-type") ?? "", /^text\/html/, role)
  assert.include(answer.text, "<h1>Page not found</h1>", role)
}

const withRequestId = (requestId: string): RequestInit => ({ headers: { "x-request-id": requestId } })

/**
 * What a server answers to `request`, written as raw bytes on a connection of its own (fetch would refuse to send
 * them), read until the server closes the connection: the status line, headers (names in lower case) and body.
 */
const rawRequest = (port: number, request: Buffer) =>
  Effect.callback<{ statusLine: string; headers: Map<string, string>; body: string }>((resume) => {
    const chunks: Array<Buffer> = []
    const socket = net.connect({ host: "127.0.0.1", port }, () => socket.write(request))
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("error", (error) => resume(Effect.die(error)))
    socket.on("end", () => {
      socket.destroy()
      const text = Buffer.concat(chunks).toString("utf8")
      const [head = "", body = ""] = text.split("\r\n\r\n", 2)
      const [statusLine = "", ...lines] = head.split("\r\n")
      const headers = new Map(
        lines.map((line) => [
          line.slice(0, line.indexOf(":")).toLowerCase(),
          line.slice(line.indexOf(":") + 1).trim(),
        ]),
      )
      resume(Effect.succeed({ statusLine, headers, body }))
    })
    return Effect.sync(() => socket.destroy())
  })

/** A body sent in chunks without a content-length, as a client streaming an upload does. */
const chunked = (text: string, chunkSize = 256): RequestInit & { duplex: "half" } => {
  const bytes = new TextEncoder().encode(text)
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    duplex: "half",
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += chunkSize)
          controller.enqueue(bytes.slice(at, at + chunkSize))
        controller.close()
      },
    }),
  }
}

const postJson = (text: string): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: text,
})

/** A JSON document of about `bytes` bytes. */
const documentOf = (bytes: number) => JSON.stringify({ padding: "x".repeat(bytes - 16) })

/** The port every gateway bound, by role. */
const gatewayPorts = Effect.map(Effect.service(ListeningPorts), (ports) => [...ports.entries()])

/** The whole service with every role, each gateway on a free port, on a database and prefix of its own. */
const serviceEnv = isolatedEnv({
  PARTNER_API_PORT: "0",
  INGEST_API_PORT: "0",
  ENROLLMENT_PORT: "0",
  CONSOLE_PORT: "0",
  PORTAL_PORT: "0",
  // Empty counts as unset: every role, whatever the shell running the tests exports.
  ROLES: "",
})
const service = Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer)).pipe(
  Layer.provideMerge(isolationLayer(serviceEnv)),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn")),
)

describe("gateways of the service", () => {
  layer(service, { excludeTestServices: true })((it) => {
    it.effect("runs a gateway for each of the five HTTP roles", () =>
      Effect.gen(function* () {
        const ports = yield* gatewayPorts
        assert.sameMembers(
          ports.map(([role]) => role),
          ["partner-api", "ingest-api", "enrollment", "console", "portal"],
        )
        for (const [role, port] of ports) assert.isAbove(port, 0, role)
      }),
    )

    it.effect("answers /healthz with status ok on every port", () =>
      Effect.gen(function* () {
        for (const [role, port] of yield* gatewayPorts) {
          const answer = yield* request(port, "/healthz")
          assert.strictEqual(answer.status, 200, role)
          assert.deepStrictEqual(JSON.parse(answer.text), { status: "ok" }, role)
        }
      }),
    )

    it.effect("answers /readyz with postgres and nats ok on every port", () =>
      Effect.gen(function* () {
        for (const [role, port] of yield* gatewayPorts) {
          const answer = yield* request(port, "/readyz")
          assert.strictEqual(answer.status, 200, role)
          const body = JSON.parse(answer.text) as { checks: unknown }
          assert.deepStrictEqual(body.checks, { postgres: "ok", nats: "ok" }, role)
        }
      }),
    )

    it.effect("serves Prometheus metrics with the request counter on the console's port only", () =>
      Effect.gen(function* () {
        for (const [role, port] of yield* gatewayPorts) {
          yield* request(port, "/healthz")
          const answer = yield* request(port, "/metrics")
          if (role !== "console") {
            assertNotFound(role, answer)
            continue
          }
          assert.strictEqual(answer.status, 200, role)
          assert.match(answer.headers.get("content-type") ?? "", /^text\/plain/, role)
          assert.match(answer.text, /^http_requests_total\{/m, role)
        }
      }),
    )

    it.effect(
      "answers an unknown path with the contract's 404 body on every port (the renter's, a page)",
      () =>
        Effect.gen(function* () {
          for (const [role, port] of yield* gatewayPorts) {
            for (const init of [{}, { method: "POST", body: "{}" }]) {
              // The console's port answers every other GET with its single-page app (test/platform/ConsoleSite).
              const path = role === "console" ? "/api/no/such/path" : "/no/such/path"
              assertNotFound(role, yield* request(port, path, init), init.method)
            }
          }
        }),
    )

    it.effect("answers a malformed percent-encoded path with 400 in the contract's shape on every port", () =>
      Effect.gen(function* () {
        for (const [role, port] of yield* gatewayPorts) {
          const answer = yield* request(port, "/partners/%ZZ/units")
          assert.strictEqual(answer.status, 400, role)
          assert.deepStrictEqual(JSON.parse(answer.text), { status_code: 400, error: "Bad Request." }, role)
          assert.isNotNull(answer.headers.get("x-request-id"), role)
        }
      }),
    )

    it.effect(
      "answers what Node's parser refuses in the contract's shape and closes the connection, on every port",
      () =>
        Effect.gen(function* () {
          const refused: ReadonlyArray<readonly [string, Buffer, number, string]> = [
            [
              "a raw 0xff byte in the path",
              Buffer.concat([
                Buffer.from("GET /partners/"),
                Buffer.from([0xff]),
                Buffer.from("/units HTTP/1.1\r\nHost: x\r\n\r\n"),
              ]),
              400,
              "Bad Request",
            ],
            [
              "an unknown method",
              Buffer.from("FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
              400,
              "Bad Request",
            ],
            [
              "a 20 KB header",
              Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20 * 1024)}\r\n\r\n`),
              431,
              "Request Header Fields Too Large",
            ],
          ]
          for (const [role, port] of yield* gatewayPorts) {
            for (const [what, request, status, reason] of refused) {
              const answer = yield* rawRequest(port, request)
              const label = `${role}, ${what}`
              assert.strictEqual(answer.statusLine, `HTTP/1.1 ${status} ${reason}`, label)
              assert.strictEqual(answer.headers.get("content-type"), "application/json", label)
              assert.strictEqual(answer.headers.get("connection"), "close", label)
              assert.match(answer.headers.get("x-request-id") ?? "", UUID, label)
              assert.strictEqual(
                Number(answer.headers.get("content-length")),
                Buffer.byteLength(answer.body),
                label,
              )
              assert.deepStrictEqual(
                JSON.parse(answer.body),
                { status_code: status, error: `${reason}.` },
                label,
              )
            }
          }
        }),
    )

    it.effect("echoes the client's X-Request-Id on every port", () =>
      Effect.gen(function* () {
        for (const [role, port] of yield* gatewayPorts) {
          for (const path of ["/healthz", "/no/such/path"]) {
            const answer = yield* request(port, path, withRequestId("abc-123"))
            assert.strictEqual(answer.headers.get("x-request-id"), "abc-123", `${role} ${path}`)
          }
        }
      }),
    )

    it.effect("gives a request a fresh id when the client sends none or an invalid one, on every port", () =>
      Effect.gen(function* () {
        for (const [role, port] of yield* gatewayPorts) {
          const answers = [
            yield* request(port, "/healthz"),
            yield* request(port, "/healthz", withRequestId("x".repeat(300))),
            yield* request(port, "/healthz", withRequestId("has spaces in it")),
          ]
          for (const answer of answers) assert.match(answer.headers.get("x-request-id") ?? "", UUID, role)
          assert.strictEqual(new Set(answers.map((a) => a.headers.get("x-request-id"))).size, 3, role)
        }
      }),
    )
  })
})

const LIMIT_BYTES = 1024

const failures: ReadonlyArray<{
  readonly error: ApiError
  readonly status: number
  readonly body: string
  readonly headers?: Record<string, string>
}> = [
  {
    error: new Unprocessable({
      message: "Prospect invalid.",
      resource: "prospect",
      fields: { phone: "Phone is not valid" },
    }),
    status: 422,
    body: `{"status_code":422,"error":"Prospect invalid.","prospect":{"phone":"Phone is not valid"},"errors":{"phone":["Phone is not valid"]}}`,
  },
  { error: new Unauthorized(), status: 401, body: `{"message":"Unauthorized"}` },
  { error: new Forbidden(), status: 403, body: `{"message":"Forbidden"}` },
  {
    error: new Conflict({ message: "Prospect already exists." }),
    status: 409,
    body: `{"status_code":409,"error":"Prospect already exists."}`,
  },
  {
    error: new TooManyRequests({ retryAfterSeconds: 30 }),
    status: 429,
    body: `{"status_code":429,"error":"Too many requests."}`,
    headers: { "retry-after": "30" },
  },
]

const logLines: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
const captureLogs = Layer.merge(
  Logger.layer([Logger.map(Logger.formatStructured, (line) => void logLines.push(line))]),
  Layer.succeed(References.MinimumLogLevel, "Info"),
)

const routes: ReadonlyArray<Route> = [
  {
    method: "POST",
    path: "/echo",
    access: "public",
    handle: (req) => Effect.map(req.json, (body) => json(200, body)),
  },
  {
    method: "GET",
    path: "/die",
    access: "public",
    handle: () => Effect.die(new Error("a bug in the handler")),
  },
  {
    method: "GET",
    path: "/database-away",
    access: "public",
    // A real refusal by the driver: nothing listens on port 1.
    handle: () =>
      Effect.acquireUseRelease(
        Effect.sync(() => postgres("postgres://postgres@127.0.0.1:1/none", { max: 1, connect_timeout: 5 })),
        (away) => Effect.tryPromise({ try: () => away`select 1`, catch: databaseFailure }),
        (away) => Effect.promise(() => away.end({ timeout: 1 })),
      ).pipe(Effect.orDie, Effect.as(json(200, {}))),
  },
  {
    method: "GET",
    path: "/log",
    access: "public",
    handle: () => Effect.logInfo("inside").pipe(Effect.as(json(200, {}))),
  },
  {
    method: "GET",
    path: "/guarded",
    access: { scope: "owners:write" },
    handle: () => Effect.succeed(json(200, {})),
  },
  ...failures.map(({ error }): Route => ({
    method: "GET",
    path: `/fail/${error._tag}`,
    access: "public",
    handle: () => Effect.fail(error),
  })),
]

const gateway = gatewayLayer("partner-api", routes).pipe(
  Layer.provide(captureLogs),
  Layer.provideMerge(
    Layer.merge(
      testPlatform({ PARTNER_API_PORT: "0", HTTP_MAX_BODY_BYTES: String(LIMIT_BYTES) }).layer,
      ListeningPorts.layer,
    ),
  ),
)

const partnerApi = (path: string, init: RequestInit = {}) =>
  Effect.flatMap(Effect.service(ListeningPorts), (ports) => request(ports.get("partner-api")!, path, init))

describe("gatewayLayer", () => {
  layer(gateway, { excludeTestServices: true })((it) => {
    it.effect("hands a route the request's JSON body", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/echo", postJson(`{"name":"Ada","tags":["a","b"]}`))
        assert.strictEqual(answer.status, 200)
        assert.deepStrictEqual(JSON.parse(answer.text), { name: "Ada", tags: ["a", "b"] })
      }),
    )

    it.effect("reads a chunked body without content-length up to the limit", () =>
      Effect.gen(function* () {
        const document = documentOf(LIMIT_BYTES - 24)
        const answer = yield* partnerApi("/echo", chunked(document, 100))
        assert.strictEqual(answer.status, 200)
        assert.deepStrictEqual(JSON.parse(answer.text), JSON.parse(document))
      }),
    )

    it.effect("answers malformed JSON with 400 and the contract's body", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/echo", postJson(`{"name": "Ada",`))
        assert.strictEqual(answer.status, 400)
        assert.strictEqual(answer.text, `{"status_code":400,"error":"Request body is not valid JSON."}`)
      }),
    )

    it.effect("answers a body over the limit with 413 when content-length announces it", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/echo", postJson(documentOf(LIMIT_BYTES * 2)))
        assert.strictEqual(answer.status, 413)
        assert.strictEqual((JSON.parse(answer.text) as { status_code: number }).status_code, 413)
      }),
    )

    it.effect("answers a chunked body over the limit with 413", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/echo", chunked(documentOf(LIMIT_BYTES * 4)))
        assert.strictEqual(answer.status, 413)
        assert.strictEqual((JSON.parse(answer.text) as { status_code: number }).status_code, 413)
      }),
    )

    it.effect("keeps answering a client that goes on sending after a chunked body over the limit", () =>
      Effect.gen(function* () {
        // The client's pooled connections are reused: none may be left waiting on an unread body.
        for (let round = 0; round < 3; round++) {
          assert.strictEqual((yield* partnerApi("/echo", postJson(`{"round":${round}}`))).status, 200)
          assert.strictEqual((yield* partnerApi("/echo", postJson(`{"round":`))).status, 400)
          assert.strictEqual((yield* partnerApi("/echo", chunked(documentOf(LIMIT_BYTES * 4)))).status, 413)
          assert.strictEqual((yield* partnerApi("/healthz")).status, 200)
          assert.strictEqual((yield* partnerApi("/healthz")).status, 200)
        }
      }),
    )

    for (const { error, status, body, headers } of failures) {
      it.effect(
        `answers a route failing with ${error._tag} with ${status} and exactly the contract's body`,
        () =>
          Effect.gen(function* () {
            const answer = yield* partnerApi(`/fail/${error._tag}`)
            assert.strictEqual(answer.status, status)
            assert.strictEqual(answer.text, body)
            assert.match(answer.headers.get("content-type") ?? "", /^application\/json/)
            for (const [name, value] of Object.entries(headers ?? {})) {
              assert.strictEqual(answer.headers.get(name), value, name)
            }
          }),
      )
    }

    it.effect("answers a route that dies with the contract's 500 and keeps serving", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/die")
        assert.strictEqual(answer.status, 500)
        assert.strictEqual(answer.text, `{"status_code":500,"error":"Internal server error."}`)
        assert.strictEqual((yield* partnerApi("/healthz")).status, 200)
        assert.strictEqual((yield* partnerApi("/echo", postJson(`{"after":"defect"}`))).status, 200)
      }),
    )

    it.effect("answers 503 with Retry-After, not 500, when Postgres refuses the connection, and warns", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/database-away")
        assert.strictEqual(answer.status, 503)
        assert.strictEqual(answer.headers.get("retry-after"), "2")
        assert.strictEqual(
          answer.text,
          `{"status_code":503,"error":"The service is briefly unavailable. Retry the request shortly."}`,
        )
        const logged = logLines.filter((line) => line.annotations.path === "/database-away")
        assert.deepStrictEqual(
          logged.map((line) => [line.message, line.annotations.dependency]),
          [["request failed: dependency unavailable", "postgres"]],
        )
      }),
    )

    it.effect("refuses a route that needs a scope when the gateway has no guard", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/guarded")
        assert.strictEqual(answer.status, 401)
        assert.strictEqual(answer.text, '{"message":"Unauthorized"}')
      }),
    )

    it.effect("annotates the log lines of a request with its request id", () =>
      Effect.gen(function* () {
        const answer = yield* partnerApi("/log", withRequestId("trace-me-42"))
        assert.strictEqual(answer.status, 200)
        const inside = logLines.filter((line) => line.message === "inside")
        assert.strictEqual(inside.length, 1)
        assert.strictEqual(inside[0]!.annotations.request_id, "trace-me-42")
        assert.strictEqual(inside[0]!.annotations.role, "partner-api")
        assert.strictEqual(inside[0]!.annotations.path, "/log")
      }),
    )
  })
})

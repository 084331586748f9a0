import { isUtf8 } from "node:buffer"
import { STATUS_CODES } from "node:http"
import { Context, Effect, Layer, Schema } from "effect"
import type { HTTPMethod } from "h3"
import { FastResponse } from "srvx/node"
import type { HttpRole } from "./Config.ts"
import { hasLoneSurrogate } from "./Text.ts"

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

/** 415: a body sent without the media type the route reads. */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  message: Schema.String,
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
  | UnsupportedMediaType
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

/** An error body in the contract's shape: `{"status_code":status,"error":error,...extra}`. */
export const endpointError = (
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
    case "UnsupportedMediaType":
      return endpointError(415, error.message)
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
  /** The body as text: bytes that are not UTF-8 are a 400, never U+FFFD (`decodeUtf8`). */
  readonly text: Effect.Effect<string, PayloadTooLarge | BadRequest>
  /** The body parsed as JSON; a body sent without a JSON Content-Type is a 415 (`jsonBody`). */
  readonly json: Effect.Effect<unknown, PayloadTooLarge | BadRequest | UnsupportedMediaType>
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

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/

/** A number's text as its significant digits and exponent, so that two spellings of one value read the same. */
const decimalOf = (text: string) => {
  const [, sign = "", whole = "", fraction = "", exponent = "0"] = DECIMAL.exec(text) ?? []
  const digits = `${whole}${fraction}`.replace(/^0+/, "")
  const significant = digits.replace(/0+$/, "")
  if (significant === "") return "0"
  return `${sign}${significant}e${Number(exponent) - fraction.length + digits.length - significant.length}`
}

/**
 * A `JSON.parse` reviver that keeps a number a double cannot hold exactly as the text sent, a string: read as a
 * double, 9007199254740993 becomes 9007199254740992, and two partners' ids one. Every other number stays a
 * number. It reads the number's own text, which `JSON.parse` hands a reviver from Node 22 on.
 */
export const exactNumbers = (
  _key: string,
  value: unknown,
  context?: { readonly source?: string },
): unknown => {
  if (typeof value !== "number" || context?.source === undefined) return value
  const written = context.source
  const exact =
    Number.isFinite(value) && (written === String(value) || decimalOf(written) === decimalOf(String(value)))
  return exact ? value : written
}

/**
 * Where a number a double could change may be: 16 or more digits, or an exponent of three digits. A double holds
 * every number of at most 15 significant digits within its range, so text without either needs no reviver.
 */
const INEXACT_NUMBER = /\d[\d.]{15}|[eE][+-]?\d{3}/

/** `JSON.parse` with `exactNumbers`, skipped for text that cannot hold a number it would change. */
export const parseExactJson = (text: string): unknown =>
  INEXACT_NUMBER.test(text) ? JSON.parse(text, exactNumbers) : JSON.parse(text)

/**
 * JSON text as a value, for every JSON body any gateway or the console API reads: nesting deeper than
 * `MAX_JSON_DEPTH`, malformed JSON and a lone surrogate anywhere are each a 400, so no route, schema or query sees
 * text that Postgres would store altered. Length and control characters are each field's own check. With
 * `exactNumbers`, a number a double would change is read as its text (a string).
 */
export const parseJsonText = (
  text: string,
  options: { readonly exactNumbers?: boolean } = {},
): Effect.Effect<unknown, BadRequest> =>
  Effect.suspend(() => {
    if (nestsTooDeep(text)) return Effect.fail(new BadRequest({ message: TOO_DEEP_MESSAGE }))
    let value: unknown
    try {
      value = options.exactNumbers === true ? parseExactJson(text) : JSON.parse(text)
    } catch {
      return Effect.fail(new BadRequest({ message: "Request body is not valid JSON." }))
    }
    return SURROGATE_ESCAPE.test(text) && holdsLoneSurrogate(value)
      ? Effect.fail(new BadRequest({ message: LONE_SURROGATE_MESSAGE }))
      : Effect.succeed(value)
  })

const utf8 = new TextDecoder("utf-8", { fatal: true })

export const NOT_UTF8_MESSAGE = "Request body is not valid UTF-8."

/**
 * A body's bytes as text, for every body any gateway or the console API reads. A byte sequence that is not UTF-8
 * is a 400: a lenient decoder would store U+FFFD in its place, so the stored text would differ from what was sent
 * and two different ids could become one.
 */
export const decodeUtf8 = (bytes: Uint8Array): Effect.Effect<string, BadRequest> =>
  Effect.try({ try: () => utf8.decode(bytes), catch: () => new BadRequest({ message: NOT_UTF8_MESSAGE }) })

/** A run of percent-escapes, whose bytes must be UTF-8 once decoded (a stray `%` stays literal, as in browsers). */
const PERCENT_RUN = /(?:%[0-9A-Fa-f]{2})+/g

/**
 * A form-encoded body as its fields. `URLSearchParams` would decode an escape that is not UTF-8 (`%FF`) to
 * U+FFFD; such a form is a 400, as raw bytes that are not UTF-8 are.
 */
export const parseFormText = (text: string): Effect.Effect<URLSearchParams, BadRequest> =>
  Effect.suspend(() => {
    for (const [run] of text.matchAll(PERCENT_RUN)) {
      const bytes = Uint8Array.from(run.slice(1).split("%"), (hex) => Number.parseInt(hex, 16))
      if (!isUtf8(bytes)) return Effect.fail(new BadRequest({ message: NOT_UTF8_MESSAGE }))
    }
    return Effect.succeed(new URLSearchParams(text))
  })

/** `application/json` or a structured `application/<x>+json` (RFC 6839), with any parameters such as charset. */
const JSON_MEDIA_TYPE = /^application\/(?:[a-z0-9!#$&^_.-]+\+)?json$/

/** Whether a `Content-Type` header names JSON. */
export const isJsonContentType = (contentType: string | null) =>
  contentType !== null && JSON_MEDIA_TYPE.test(contentType.split(";")[0]!.trim().toLowerCase())

export const NOT_JSON_TYPE_MESSAGE = "Request body must be JSON, sent with Content-Type: application/json."

/**
 * A JSON route reads a body only when it was sent as JSON: a body under another type, or none, is a 415 before
 * anything parses it, so a form or text a client did not mean as JSON is never read as JSON. An empty body
 * needs no type.
 */
export const requireJsonType = (
  headers: Headers,
  byteLength: number,
): Effect.Effect<void, UnsupportedMediaType> =>
  byteLength === 0 || isJsonContentType(headers.get("content-type"))
    ? Effect.void
    : Effect.fail(new UnsupportedMediaType({ message: NOT_JSON_TYPE_MESSAGE }))

/** A JSON route's body text as a value: its Content-Type checked (`requireJsonType`), then parsed. */
export const jsonBody = (
  headers: Headers,
  text: string,
): Effect.Effect<unknown, BadRequest | UnsupportedMediaType> =>
  Effect.andThen(requireJsonType(headers, text.length), parseJsonText(text))

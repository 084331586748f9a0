import { Clock, Effect } from "effect"
import { EventNames } from "../events/Catalog.ts"
import { AppConfig } from "../platform/Config.ts"
import { textProblem } from "../contract/FieldLimits.ts"
import { hasControlCharacter } from "../platform/Text.ts"
import {
  type ApiError,
  Forbidden,
  type Guard,
  type HttpRequest,
  json,
  NotFound,
  type Route,
  Unauthorized,
  Unprocessable,
} from "../platform/Http.ts"
import {
  EndpointStatuses,
  type EndpointStatus,
  MAX_OVERLAP_MS,
  type SubscriberRef,
} from "../webhooks/Domain.ts"
import type { Billing } from "../policies/Billing.ts"
import type { Revisions } from "../policies/Revisions.ts"
import { EndpointOperations } from "../webhooks/Operations.ts"
import { AuditChannel } from "../audit/Audit.ts"
import { BulkRetries } from "./BulkRetries.ts"
import { DeliveryActions } from "./DeliveryActions.ts"
import { Deliveries, fromSearchParams } from "./DeliveryQueries.ts"
import { Health } from "./Health.ts"
import { isRole, type Role, roleAtLeast } from "./Domain.ts"
import { Operators } from "./Operators.ts"
import { type CurrentSession, ABSOLUTE_TIMEOUT_MS, Sessions } from "./Sessions.ts"

/** What the operator routes use. */
export type OperatorServices =
  | Sessions
  | Operators
  | EndpointOperations
  | Deliveries
  | DeliveryActions
  | Health
  | BulkRetries
  | Revisions
  | Billing
  | AppConfig

export const SESSION_COOKIE = "console_session"
export const CSRF_HEADER = "x-csrf-token"
const SCOPE_PREFIX = "console:"

/** The route's access for operators of `role` and above. */
const needs = (role: Role) => ({ scope: `${SCOPE_PREFIX}${role}` })

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/** The session token of the request's `console_session` cookie. */
export const sessionToken = (headers: Headers) => {
  for (const part of (headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=")
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim()
  }
  return undefined
}

const cookie = (value: string, maxAgeSeconds: number, secure: boolean) =>
  `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`

/**
 * The console's guard: a live session (401), the CSRF token on every state-changing call and a role at least the
 * route's (403). The caller is the operator's email with its role as its one scope.
 */
export const operatorGuard: Guard<Sessions> = {
  authenticate: (route, request) =>
    Effect.gen(function* () {
      const sessions = yield* Sessions
      const session = yield* sessions.current(sessionToken(request.headers))
      if (session === undefined) return yield* new Unauthorized()
      if (
        !SAFE_METHODS.has(request.method) &&
        !sessions.csrfMatches(session, request.headers.get(CSRF_HEADER))
      ) {
        return yield* new Forbidden()
      }
      const scope = route.access === "public" ? undefined : route.access.scope
      const needed = scope?.startsWith(SCOPE_PREFIX) ? scope.slice(SCOPE_PREFIX.length) : undefined
      if (!isRole(needed) || !roleAtLeast(session.operator.role, needed)) return yield* new Forbidden()
      return {
        clientId: session.operator.email,
        scopes: new Set([`${SCOPE_PREFIX}${session.operator.role}`]),
      }
    }),
}

export const invalid = (message: string, resource: string, fields: Record<string, string>) =>
  new Unprocessable({ message, resource, fields })

/** Domain failures of the operator routes as the contract's errors. */
const toApiError = (error: { readonly _tag: string } & Record<string, unknown>): ApiError => {
  switch (error._tag) {
    case "OperatorRejected":
      return invalid("Invalid operator.", "operator", { [error.field as string]: error.message as string })
    case "OperatorNotFound":
      return new NotFound({ message: "Operator not found." })
    case "EndpointNotFound":
      return new NotFound({ message: "Endpoint not found." })
    case "DeliveryNotFound":
      return new NotFound({ message: "Delivery not found." })
    case "OwnerUnknown":
      return new NotFound({ message: "Property owner not found." })
    case "BulkRetryInvalid":
      return invalid("Invalid bulk retry.", "bulk_retry", error.fields as Record<string, string>)
    case "BulkRetryNotFound":
      return new NotFound({ message: "Bulk retry not found." })
    case "DeliveryFilterInvalid":
      return invalid("Invalid filter.", "filter", error.fields as Record<string, string>)
    case "PolicyNotFound":
      return new NotFound({ message: "Policy not found." })
    case "ProviderNotProvisioned":
      return new NotFound({ message: "Provider not found." })
    default:
      return error as unknown as ApiError
  }
}

/** An object body, or 422. */
export const objectBody = (request: HttpRequest, resource: string) =>
  Effect.flatMap(request.json, (body) =>
    typeof body === "object" && body !== null && !Array.isArray(body)
      ? Effect.succeed(body as Record<string, unknown>)
      : Effect.fail(invalid("Request body must be a JSON object.", resource, { base: "must be an object" })),
  )

export const actorOf = (request: HttpRequest) => request.caller!.clientId

/** A route of the console: its writes audited as `console`, its domain failures in the contract's shape. */
export const route = <E extends { readonly _tag: string }>(
  method: Route["method"],
  path: string,
  role: Role | "public",
  handle: (request: HttpRequest) => Effect.Effect<Response, E | ApiError, OperatorServices>,
): Route<OperatorServices> => ({
  method,
  path,
  access: role === "public" ? "public" : needs(role),
  handle: (request) =>
    handle(request).pipe(
      Effect.mapError((error) => toApiError(error as never)),
      Effect.provideService(AuditChannel, "console"),
    ),
})

// Query parameters.

const MAX_LIMIT = 100
const DEFAULT_LIMIT = 50
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

/** Reads query parameters into `fields` (a message per bad one); empty values count as absent. */
export const queryReader = (query: URLSearchParams) => {
  const fields: Record<string, string> = {}
  const text = (name: string, max = 200) => {
    const value = query.get(name)
    if (value === null || value === "") return undefined
    if (value.length > max) fields[name] = `is too long (maximum is ${max} characters)`
    return value
  }
  const date = (name: string) => {
    const value = text(name, 40)
    if (value === undefined) return undefined
    const at = DATE_TIME.test(value) ? new Date(value) : new Date(Number.NaN)
    if (Number.isNaN(at.getTime())) fields[name] = "must be a date-time"
    return at
  }
  const limit = () => {
    const value = text("limit", 4)
    if (value === undefined) return DEFAULT_LIMIT
    const n = /^\d+$/.test(value) ? Number(value) : 0
    if (n < 1 || n > MAX_LIMIT) fields.limit = `must be an integer from 1 to ${MAX_LIMIT}`
    return n
  }
  /** The cursor: an id, made opaque. */
  const cursor = () => {
    const value = text("cursor", 64)
    if (value === undefined) return undefined
    const id = Buffer.from(value, "base64url").toString("utf8")
    if (!/^\d{1,18}$/.test(id)) fields.cursor = "is not a cursor of this list"
    return id
  }
  return { fields, text, date, limit, cursor }
}

export const encodeCursor = (id: string | number | undefined) =>
  id === undefined ? null : Buffer.from(String(id), "utf8").toString("base64url")

export const checkedQuery = <A>(reader: ReturnType<typeof queryReader>, read: A) =>
  Object.keys(reader.fields).length > 0
    ? Effect.fail(invalid("Invalid filter.", "filter", reader.fields))
    : Effect.succeed(read)

// Session routes.

const sessionBody = (session: Pick<CurrentSession, "operator" | "csrfToken">) => ({
  operator: { email: session.operator.email, role: session.operator.role },
  csrf_token: session.csrfToken,
})

const signIn = route("POST", "/api/session", "public", (request) =>
  Effect.gen(function* () {
    const body = yield* objectBody(request, "session")
    const fields: Record<string, string> = {}
    for (const name of ["email", "password"] as const) {
      const value = body[name]
      if (typeof value !== "string" || value.length === 0) fields[name] = "is required"
      else if (value.length > 1024 || hasControlCharacter(value)) fields[name] = "is not valid"
    }
    if (Object.keys(fields).length > 0) return yield* invalid("Invalid sign-in.", "session", fields)
    const secure = (yield* AppConfig).serviceEnv !== "development"
    return yield* (yield* Sessions)
      .signIn(body.email as string, body.password as string, request.remoteAddress)
      .pipe(
        Effect.map((signed) =>
          json(200, sessionBody(signed), {
            "set-cookie": cookie(signed.token, ABSOLUTE_TIMEOUT_MS / 1000, secure),
            "cache-control": "no-store",
          }),
        ),
        Effect.catchTags({
          SignInRefused: () => Effect.succeed(json(401, { message: "Email or password is incorrect." })),
          SignInThrottled: (error) =>
            Effect.succeed(
              json(
                429,
                { message: `Too many sign-in attempts; try again in ${error.retryAfterSeconds} seconds.` },
                { "retry-after": String(error.retryAfterSeconds) },
              ),
            ),
        }),
      )
  }),
)

/** The guard has checked the session; it is read again for its CSRF token. */
const currentSession = (request: HttpRequest) =>
  Effect.gen(function* () {
    const sessions = yield* Sessions
    const session = yield* sessions.current(sessionToken(request.headers))
    if (session === undefined) return yield* new Unauthorized()
    return { sessions, session }
  })

const sessionRoutes = [
  signIn,
  route("GET", "/api/session", "viewer", (request) =>
    Effect.map(currentSession(request), ({ session }) =>
      json(200, sessionBody(session), { "cache-control": "no-store" }),
    ),
  ),
  route("DELETE", "/api/session", "viewer", (request) =>
    Effect.gen(function* () {
      const { sessions, session } = yield* currentSession(request)
      yield* sessions.signOut(session)
      const secure = (yield* AppConfig).serviceEnv !== "development"
      return new Response(null, { status: 204, headers: { "set-cookie": cookie("", 0, secure) } })
    }),
  ),
]

// Reference data.

const referenceRoutes = [
  route("GET", "/api/owners", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const q = yield* checkedQuery(reader, reader.text("q", 100))
      return json(200, { owners: yield* (yield* Operators).owners(q) })
    }),
  ),
  route("GET", "/api/providers", "viewer", () =>
    Effect.gen(function* () {
      return json(200, { providers: yield* (yield* Operators).providers })
    }),
  ),
  route("GET", "/api/event-types", "viewer", () => Effect.succeed(json(200, { event_types: EventNames }))),
]

// Audit.

const auditRoutes = [
  route("GET", "/api/audit", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const filter = yield* checkedQuery(reader, {
        actor: reader.text("actor"),
        action: reader.text("action"),
        target: reader.text("target"),
        since: reader.date("since"),
        until: reader.date("until"),
        before: reader.cursor(),
        limit: reader.limit(),
      })
      const page = yield* (yield* Operators).auditLog(filter)
      return json(200, { entries: page.entries, next_cursor: encodeCursor(page.lastId) })
    }),
  ),
]

// Operators.

const operatorRoutes = [
  route("GET", "/api/operators", "admin", () =>
    Effect.gen(function* () {
      return json(200, { operators: yield* (yield* Operators).list() })
    }),
  ),
  route("POST", "/api/operators", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "operator")
      const created = yield* (yield* Operators).create(
        { email: body.email, role: body.role },
        actorOf(request),
      )
      return json(201, { operator: created.operator, password: created.password })
    }),
  ),
  route("PUT", "/api/operators/:email", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "operator")
      const email = request.params.email ?? ""
      // An admin cannot lock themself out; another admin can.
      if (
        email.toLowerCase() === actorOf(request).toLowerCase() &&
        (body.disabled === true || (body.role !== undefined && body.role !== "admin"))
      ) {
        return yield* invalid("Invalid operator.", "operator", {
          base: "you cannot disable or demote yourself",
        })
      }
      const updated = yield* (yield* Operators).update(
        email,
        { role: body.role, disabled: body.disabled },
        actorOf(request),
      )
      return json(200, { operator: updated })
    }),
  ),
]

// Endpoints, deliveries, secrets.

const isEndpointStatus = (value: unknown): value is EndpointStatus =>
  (EndpointStatuses as ReadonlyArray<unknown>).includes(value)

const endpointRoutes = [
  route("GET", "/api/endpoints", "viewer", (request) =>
    Effect.gen(function* () {
      const reader = queryReader(request.query)
      const status = reader.text("status", 20)
      if (status !== undefined && !isEndpointStatus(status)) {
        reader.fields.status = `must be one of ${EndpointStatuses.join(", ")}`
      }
      const filter = yield* checkedQuery(reader, {
        owner: reader.text("owner"),
        provider: reader.text("provider"),
        status: status as EndpointStatus | undefined,
        beforeId: reader.cursor(),
        limit: reader.limit(),
      })
      const endpoints = yield* (yield* EndpointOperations).list(filter)
      return json(200, {
        endpoints,
        next_cursor: endpoints.length === filter.limit ? encodeCursor(endpoints.at(-1)?.id) : null,
      })
    }),
  ),
  route("GET", "/api/endpoints/:id", "viewer", (request) =>
    Effect.gen(function* () {
      const endpoint = yield* (yield* EndpointOperations).get(request.params.id ?? "")
      const health = yield* (yield* Health).health(endpoint.id, new Date(yield* Clock.currentTimeMillis))
      return json(200, { endpoint, health })
    }),
  ),
  route("PUT", "/api/endpoints/:id/status", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "endpoint")
      const fields: Record<string, string> = {}
      if (!isEndpointStatus(body.status)) fields.status = `must be one of ${EndpointStatuses.join(", ")}`
      const reason = typeof body.reason === "string" ? body.reason.trim() : undefined
      if (body.reason !== undefined && body.reason !== null && typeof body.reason !== "string") {
        fields.reason = "must be a string"
      } else if (reason !== undefined && (reason.length > 500 || hasControlCharacter(reason))) {
        fields.reason = "must be at most 500 characters without control characters"
      } else if (body.status === "disabled" && !reason) {
        fields.reason = "is required to disable an endpoint"
      }
      if (Object.keys(fields).length > 0)
        return yield* invalid("Invalid endpoint status.", "endpoint", fields)
      const endpoint = yield* (yield* EndpointOperations).setStatus(
        request.params.id ?? "",
        body.status as EndpointStatus,
        reason || undefined,
        actorOf(request),
      )
      return json(200, { endpoint })
    }),
  ),
  route("PUT", "/api/endpoints/:id/headers", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "endpoint")
      const endpoint = yield* (yield* EndpointOperations)
        .setHeaders(request.params.id ?? "", body.custom_headers, actorOf(request))
        .pipe(
          Effect.catchTag("WebhookCommandRejected", (error) =>
            Effect.fail(invalid("Invalid custom headers.", "endpoint", { custom_headers: error.message })),
          ),
        )
      return json(200, { endpoint })
    }),
  ),
  route("POST", "/api/endpoints/:id/test", "operator", (request) =>
    Effect.gen(function* () {
      const delivery = yield* (yield* EndpointOperations).sendTest(request.params.id ?? "", actorOf(request))
      return json(202, { delivery })
    }),
  ),
]

const deliveryRoutes = [
  route("GET", "/api/deliveries", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, yield* (yield* Deliveries).list(fromSearchParams(request.query)))
    }),
  ),
  route("GET", "/api/deliveries/count", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { count: yield* (yield* Deliveries).count(fromSearchParams(request.query)) })
    }),
  ),
  route("GET", "/api/deliveries/:id", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { delivery: yield* (yield* Deliveries).detail(request.params.id ?? "") })
    }),
  ),
  route("POST", "/api/deliveries/:id/retry", "operator", (request) =>
    Effect.gen(function* () {
      const delivery = yield* (yield* DeliveryActions).retry(request.params.id ?? "", actorOf(request))
      return json(202, { delivery })
    }),
  ),
]

const bulkRetryRoutes = [
  route("POST", "/api/bulk-retries", "operator", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "bulk_retry")
      const job = yield* (yield* DeliveryActions).createBulkRetry(
        body.filter,
        body.rate_per_second,
        actorOf(request),
      )
      return json(201, { bulk_retry: job })
    }),
  ),
  route("GET", "/api/bulk-retries", "viewer", () =>
    Effect.gen(function* () {
      return json(200, { bulk_retries: yield* (yield* BulkRetries).list() })
    }),
  ),
  route("GET", "/api/bulk-retries/:id", "viewer", (request) =>
    Effect.gen(function* () {
      return json(200, { bulk_retry: yield* (yield* BulkRetries).get(request.params.id ?? "") })
    }),
  ),
  route("POST", "/api/bulk-retries/:id/cancel", "operator", (request) =>
    Effect.gen(function* () {
      const job = yield* (yield* DeliveryActions).cancelBulkRetry(request.params.id ?? "", actorOf(request))
      return json(200, { bulk_retry: job })
    }),
  ),
]

const secretRoutes = [
  route("GET", "/api/secrets", "viewer", () =>
    Effect.gen(function* () {
      return json(200, { subscribers: yield* (yield* EndpointOperations).secretsOverview() })
    }),
  ),
  route("POST", "/api/secrets/rotate", "admin", (request) =>
    Effect.gen(function* () {
      const body = yield* objectBody(request, "secret")
      const fields: Record<string, string> = {}
      const owner = typeof body.owner === "string" && body.owner !== "" ? body.owner : undefined
      const provider = typeof body.provider === "string" && body.provider !== "" ? body.provider : undefined
      if ((owner === undefined) === (provider === undefined))
        fields.base = "name exactly one of owner and provider"
      // A name no owner or provider can have is refused before it is looked up (Postgres cannot compare U+0000).
      for (const [field, name] of [
        ["owner", owner],
        ["provider", provider],
      ] as const) {
        const problem = name === undefined ? undefined : textProblem("name", name)
        if (problem !== undefined) fields[field] = problem
      }
      const hours = body.overlap_hours
      const maxHours = MAX_OVERLAP_MS / 3_600_000
      if (typeof hours !== "number" || !Number.isInteger(hours) || hours < 0 || hours > maxHours) {
        fields.overlap_hours = `must be an integer from 0 to ${maxHours}`
      }
      if (Object.keys(fields).length > 0) return yield* invalid("Invalid rotation.", "secret", fields)
      const ref: SubscriberRef =
        owner !== undefined ? { kind: "owner", slug: owner } : { kind: "provider", name: provider! }
      const rotated = yield* (yield* EndpointOperations)
        .rotate(ref, (hours as number) * 3_600_000, actorOf(request))
        .pipe(
          Effect.catchTag("WebhookCommandRejected", (error) =>
            Effect.fail(invalid("Invalid rotation.", "secret", { base: error.message })),
          ),
        )
      return json(
        201,
        {
          secret: rotated.secret,
          created_at: rotated.created_at,
          previous_expires_at: rotated.previous_expires_at,
        },
        { "cache-control": "no-store" },
      )
    }),
  ),
]

/** Unknown `/api` paths answer the JSON 404, whatever the console's page fallback serves elsewhere. */
const apiNotFound: Route<never> = {
  method: "GET",
  path: "/api/**",
  access: "public",
  handle: () => Effect.fail(new NotFound({ message: "Not found." })),
}

/** Every route of the operator API (the console role's `/api`). */
export const operatorApiRoutes: ReadonlyArray<Route<OperatorServices>> = [
  ...sessionRoutes,
  ...referenceRoutes,
  ...auditRoutes,
  ...operatorRoutes,
  ...endpointRoutes,
  ...deliveryRoutes,
  ...bulkRetryRoutes,
  ...secretRoutes,
  ...(["GET", "POST", "PUT", "PATCH", "DELETE"] as const).map((method) => ({ ...apiNotFound, method })),
]

import { Clock, Context, Effect, Layer, References } from "effect"
import { generateKeyPair, importJWK, type JWK, SignJWT } from "jose"
import { appLayer } from "../../backend/App.ts"
import { Auth } from "../../backend/auth/Auth.ts"
import type { Gateway } from "../../backend/auth/Domain.ts"
import { authGuard } from "../../backend/auth/Http.ts"
import { AppConfig, type HttpRole } from "../../backend/platform/Config.ts"
import { Crypto } from "../../backend/platform/Crypto.ts"
import { Db } from "../../backend/platform/Db.ts"
import { gatewayLayer } from "../../backend/platform/Gateway.ts"
import { json, ListeningPorts, type Route } from "../../backend/platform/Http.ts"
import { isolatedEnv, isolationLayer } from "./TestPlatform.ts"

/** The contract's bodies, byte for byte. */
export const UNAUTHORIZED = `{"message":"Unauthorized"}`
export const FORBIDDEN = `{"message":"Forbidden"}`
export const OWNER_NOT_FOUND = `{"status_code":404,"error":"Property owner not found."}`
export const ACCESS_DENIED = `{"error":"access_denied","error_description":"Unauthorized"}`

/**
 * An isolated env running both gateways on free ports, with issuers and audiences that differ from each other
 * and from the listening addresses, so a test can tell which one a token carries.
 */
export const authEnv = (overrides: Record<string, string> = {}) =>
  isolatedEnv({
    ROLES: "partner-api,ingest-api",
    PARTNER_API_PORT: "0",
    INGEST_API_PORT: "0",
    PUBLIC_BASE_URL: "https://partner-api.test",
    INGEST_BASE_URL: "https://ingest.test",
    PARTNER_API_AUDIENCE: "urn:partner-service:partner-api",
    INGEST_API_AUDIENCE: "urn:partner-service:ingest-api",
    // Empty counts as unset: the contract's 8,600 seconds, whatever the shell running the tests exports.
    TOKEN_TTL_SECONDS: "",
    ...overrides,
  })

/**
 * Routes that exist only in tests, behind the partner gateway's own guard: an owner route and a provider
 * route, so every check of the guard runs before the real owner and provider routes exist.
 */
export const fixtureRoutes: ReadonlyArray<Route> = [
  {
    method: "GET",
    path: "/partners/:owner_slug/fixture",
    access: { scope: "properties:write" },
    handle: (request) =>
      Effect.succeed(
        json(200, { client_id: request.caller?.clientId, owner_slug: request.params.owner_slug }),
      ),
  },
  {
    method: "GET",
    path: "/partners/providers/:provider/fixture",
    access: { scope: "webhooks:manage" },
    handle: (request) =>
      Effect.succeed(json(200, { client_id: request.caller?.clientId, provider: request.params.provider })),
  },
]

/** An event route of the ingestion gateway's kind that answers who called: the guard checked on its own. */
export const ingestFixtureRoute: Route = {
  method: "POST",
  path: "/events/fixture",
  access: { scope: "ingest:events" },
  handle: (request) => Effect.succeed(json(202, { client_id: request.caller?.clientId })),
}

/**
 * Gateways serving the fixture routes through the real guards, on free ports of their own: `port` behind
 * `authGuard("partner")`, `ingestPort` behind `authGuard("ingest")`.
 */
export class FixtureGateway extends Context.Service<
  FixtureGateway,
  { readonly port: number; readonly ingestPort: number }
>()("test/support/Auth/FixtureGateway") {
  static readonly layer = Layer.effect(
    FixtureGateway,
    Effect.gen(function* () {
      const ports = new Map<HttpRole, number>()
      yield* Layer.build(
        Layer.mergeAll(
          gatewayLayer("partner-api", fixtureRoutes, authGuard("partner")),
          gatewayLayer("ingest-api", [ingestFixtureRoute], authGuard("ingest")),
        ).pipe(Layer.provide(Layer.succeed(ListeningPorts, ports))),
      )
      return { port: ports.get("partner-api")!, ingestPort: ports.get("ingest-api")! }
    }),
  )
}

/**
 * The service's partner and ingestion gateways plus the fixture gateway, sharing one `Auth`, on a database and
 * subject prefix of their own (dropped when the layer is released). `references` (a logger, a clock) replace
 * the default of logging warnings only; the service and the tests both run with them.
 */
export const authService = (
  options: {
    readonly env?: Record<string, string>
    readonly references?: Layer.Layer<never>
  } = {},
) => {
  const env = options.env ?? authEnv()
  const layer = FixtureGateway.layer.pipe(
    Layer.provideMerge(Layer.unwrap(Effect.map(Effect.service(AppConfig), appLayer))),
    Layer.provideMerge(isolationLayer(env)),
    Layer.provideMerge(options.references ?? Layer.succeed(References.MinimumLogLevel, "Warn")),
  )
  return { env, layer }
}

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** One HTTP request to a local port, with the raw body text of the answer. */
export const httpRequest = (port: number, path: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, init)
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

export const gatewayPort = (role: HttpRole) =>
  Effect.map(Effect.service(ListeningPorts), (ports) => ports.get(role)!)

export const fixturePort = Effect.map(Effect.service(FixtureGateway), (gateway) => gateway.port)
export const ingestFixturePort = Effect.map(Effect.service(FixtureGateway), (gateway) => gateway.ingestPort)

export const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } })

/** A property owner row, as the roster will create them. */
export const createOwner = (slug: string, name = `Owner ${slug}`) =>
  Effect.flatMap(Effect.service(Db), (db) =>
    db.query((sql) => sql`insert into owners (slug, name) values (${slug}, ${name})`),
  ).pipe(Effect.as(slug))

export interface CreatedClient {
  readonly clientId: string
  readonly clientSecret: string
}

/** A client made as the operator's CLI makes it; every scope of its gateway unless `scopes` says otherwise. */
export const createClient = (input: {
  readonly gateway: Gateway
  readonly name?: string
  readonly scopes?: ReadonlyArray<string>
  readonly owners?: ReadonlyArray<string>
  readonly provider?: string
  readonly source?: string
}) =>
  Effect.flatMap(Effect.service(Auth), (auth) =>
    auth.createClient({ ...input, name: input.name ?? `${input.gateway} test client` }),
  ).pipe(Effect.orDie)

export interface TokenFields {
  readonly grant_type?: string
  readonly client_id?: string
  readonly client_secret?: string
  readonly audience?: string
  readonly scope?: string
}

/** `POST /token` with the fields as JSON, or as a form (what OAuth libraries send), and any extra headers. */
export const requestToken = (
  port: number,
  fields: TokenFields,
  options: { readonly encoding?: "json" | "form"; readonly headers?: Record<string, string> } = {},
) =>
  httpRequest(port, "/token", {
    method: "POST",
    headers: {
      "content-type": options.encoding === "form" ? "application/x-www-form-urlencoded" : "application/json",
      ...options.headers,
    },
    body:
      options.encoding === "form"
        ? new URLSearchParams(fields as Record<string, string>).toString()
        : JSON.stringify(fields),
  })

/** The audience of `gateway` in the env under test. */
export const audienceOf = (gateway: Gateway) =>
  Effect.map(Effect.service(AppConfig), (config) => config.audiences[gateway])

/** An access token from `gateway`'s `/token` for `client`, with every granted scope or just `scope`. */
export const obtainToken = (gateway: Gateway, client: CreatedClient, scope?: string) =>
  Effect.gen(function* () {
    const port = yield* gatewayPort(gateway === "partner" ? "partner-api" : "ingest-api")
    const answer = yield* requestToken(port, {
      grant_type: "client_credentials",
      client_id: client.clientId,
      client_secret: client.clientSecret,
      audience: yield* audienceOf(gateway),
      ...(scope === undefined ? {} : { scope }),
    })
    if (answer.status !== 200) {
      return yield* Effect.die(new Error(`token request refused: ${answer.status} ${answer.text}`))
    }
    return (JSON.parse(answer.text) as { access_token: string }).access_token
  })

/** The key that signs now: the newest unretired row of `signing_keys`, opened with MASTER_KEY. */
const activeSigningKey = Effect.gen(function* () {
  const db = yield* Db
  const crypto = yield* Crypto
  const [row] = yield* db.query(
    (sql) => sql<Array<{ kid: string; private_jwk_sealed: Buffer }>>`
      select kid, private_jwk_sealed from signing_keys where retired_at is null
      order by created_at desc, kid limit 1`,
  )
  if (row === undefined) return yield* Effect.die(new Error("no active signing key"))
  const jwk = JSON.parse((yield* crypto.open(row.private_jwk_sealed)).toString("utf8")) as JWK
  return { kid: row.kid, privateKey: yield* Effect.promise(() => importJWK(jwk, "ES256")) }
}).pipe(Effect.provide(Crypto.layer))

/**
 * A token with the claims the service would put in it for `clientId` on `gateway`, signed by the active key
 * or, with `key: "another"`, by a fresh key pair that claims the active key's kid. Times are in seconds from
 * now. `issuerOf` and `audienceOf` name another gateway's issuer or audience, `without` leaves claims out.
 */
export const signToken = (options: {
  readonly clientId: string
  readonly scope: string | number
  readonly gateway?: Gateway
  readonly issuedAt?: number
  readonly expiresAt?: number
  readonly key?: "active" | "another"
  readonly issuerOf?: Gateway
  readonly audienceOf?: Gateway
  readonly without?: ReadonlyArray<"sub" | "iat" | "exp">
}) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const gateway = options.gateway ?? "partner"
    const active = yield* activeSigningKey
    const privateKey =
      options.key === "another"
        ? (yield* Effect.promise(() => generateKeyPair("ES256"))).privateKey
        : active.privateKey
    const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const without = new Set(options.without ?? [])
    const token = new SignJWT({ scope: options.scope })
      .setProtectedHeader({ alg: "ES256", kid: active.kid, typ: "JWT" })
      .setIssuer((options.issuerOf ?? gateway) === "partner" ? config.publicBaseUrl : config.ingestBaseUrl)
      .setAudience(config.audiences[options.audienceOf ?? gateway])
      .setJti(`test-${now}`)
    if (!without.has("sub")) token.setSubject(options.clientId)
    if (!without.has("iat")) token.setIssuedAt(now + (options.issuedAt ?? 0))
    if (!without.has("exp")) token.setExpirationTime(now + (options.expiresAt ?? config.tokenTtlSeconds))
    return yield* Effect.promise(() => token.sign(privateKey))
  })

/** Validly signed by the active key, for the right client and audience, but past its expiry. */
export const expiredToken = (clientId: string, scope: string) =>
  signToken({ clientId, scope, issuedAt: -9000, expiresAt: -400 })

/** Right claims and the active key's kid, but signed by a key the service never had. */
export const tokenSignedByAnotherKey = (clientId: string, scope: string) =>
  signToken({ clientId, scope, key: "another" })

import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { decodeJwt } from "jose"
import { routesFor } from "../../backend/App.ts"
import { Auth } from "../../backend/auth/Auth.ts"
import { gatewayScopes } from "../../backend/auth/Scopes.ts"
import type { AppConfig } from "../../backend/platform/Config.ts"
import { Db } from "../../backend/platform/Db.ts"
import type { ListeningPorts, Route } from "../../backend/platform/Http.ts"
import {
  authService,
  createClient,
  createOwner,
  type CreatedClient,
  expiredToken,
  FORBIDDEN,
  fixturePort,
  fixtureRoutes,
  gatewayPort,
  httpRequest,
  ingestFixturePort,
  ingestFixtureRoute,
  obtainToken,
  OWNER_NOT_FOUND,
  tokenSignedByAnotherKey,
  UNAUTHORIZED,
} from "../support/Auth.ts"

const GRANTED_OWNER = "granted-owner"
const UNGRANTED_OWNER = "ungranted-owner"
const PROVIDER = "acme-pms"

/** A route under test and the gateway serving it: the real partner gateway, or the fixture gateway. */
interface GuardedRoute {
  readonly route: Route<unknown>
  readonly served: "partner-api" | "fixture"
  readonly scope: string
}

const realRoutes = routesFor("partner-api", "development") as ReadonlyArray<Route<unknown>>
const publicRoutes = realRoutes.filter((route) => route.access === "public")
const guardedRoutes: ReadonlyArray<GuardedRoute> = [
  ...realRoutes.map((route) => ({ route, served: "partner-api" as const })),
  ...fixtureRoutes.map((route) => ({ route: route as Route<unknown>, served: "fixture" as const })),
].flatMap(({ route, served }) =>
  route.access === "public" ? [] : [{ route, served, scope: route.access.scope }],
)

const isOwnerRoute = (route: Route<unknown>) => route.path.includes(":owner_slug")
const isProviderRoute = (route: Route<unknown>) => route.path.includes(":provider")

/** The route's path with `:owner_slug` and `:provider` filled in, and any other parameter as `x`. */
const pathOf = (
  route: Route<unknown>,
  values: { readonly owner_slug?: string; readonly provider?: string } = {},
) =>
  route.path.replace(/:(\w+)/g, (_, name: string) => {
    if (name === "owner_slug") return values.owner_slug ?? GRANTED_OWNER
    if (name === "provider") return values.provider ?? PROVIDER
    return "x"
  })

const requestInit = (route: Route<unknown>, authorization: string | undefined): RequestInit => ({
  method: route.method,
  headers: {
    ...(authorization === undefined ? {} : { authorization }),
    ...(route.method === "GET" || route.method === "HEAD" ? {} : { "content-type": "application/json" }),
  },
  ...(route.method === "GET" || route.method === "HEAD" ? {} : { body: "{}" }),
})

/**
 * What each real route answers once the guard lets a caller through, for the request `requestInit` sends: `{}`
 * (422 where a body is required), `x` for every id (404), an unprovisioned provider (404). A 500 is none of these.
 */
const PASSED_GUARD: Readonly<Record<string, number>> = {
  "POST /partners/property_owners": 422,
  "POST /partners/:owner_slug/bank_accounts": 422,
  "POST /partners/:owner_slug/properties": 422,
  "POST /partners/:owner_slug/units": 422,
  "POST /partners/:owner_slug/prospects": 422,
  "GET /partners/:owner_slug/prospects/:source/:source_prospect_id": 404,
  "POST /partners/:owner_slug/webhooks/endpoints": 422,
  "GET /partners/:owner_slug/webhooks/endpoints": 200,
  "GET /partners/:owner_slug/webhooks/endpoints/:id": 404,
  "PUT /partners/:owner_slug/webhooks/endpoints/:id": 404,
  "DELETE /partners/:owner_slug/webhooks/endpoints/:id": 404,
  "GET /partners/:owner_slug/webhooks/endpoints/:endpoint_id/deliveries": 404,
  "GET /partners/:owner_slug/webhooks/endpoints/:endpoint_id/deliveries/:id": 404,
  "POST /partners/:owner_slug/webhooks/endpoints/:endpoint_id/deliveries/:id/retry": 404,
  "POST /partners/:owner_slug/webhooks/endpoints/:endpoint_id/replay": 404,
  "GET /partners/:owner_slug/webhooks/endpoints/:endpoint_id/replays/:id": 404,
  "POST /partners/:owner_slug/webhooks/endpoints/:endpoint_id/replays/:id/cancel": 404,
  "POST /partners/:owner_slug/webhooks/portal_sessions": 201,
  "DELETE /partners/:owner_slug/webhooks/portal_sessions": 204,
  "POST /partners/providers/:provider/webhooks/portal_sessions": 404,
  "DELETE /partners/providers/:provider/webhooks/portal_sessions": 404,
  "POST /partners/providers/:provider/webhooks/endpoints": 404,
  "GET /partners/providers/:provider/webhooks/endpoints": 404,
  "GET /partners/providers/:provider/webhooks/endpoints/:id": 404,
  "PUT /partners/providers/:provider/webhooks/endpoints/:id": 404,
  "DELETE /partners/providers/:provider/webhooks/endpoints/:id": 404,
  "GET /partners/providers/:provider/webhooks/endpoints/:endpoint_id/deliveries": 404,
  "GET /partners/providers/:provider/webhooks/endpoints/:endpoint_id/deliveries/:id": 404,
  "POST /partners/providers/:provider/webhooks/endpoints/:endpoint_id/deliveries/:id/retry": 404,
  "POST /partners/providers/:provider/webhooks/endpoints/:endpoint_id/replay": 404,
  "GET /partners/providers/:provider/webhooks/endpoints/:endpoint_id/replays/:id": 404,
  "POST /partners/providers/:provider/webhooks/endpoints/:endpoint_id/replays/:id/cancel": 404,
  "POST /partners/:owner_slug/move_outs": 422,
  "GET /partners/:owner_slug/test_clock": 200,
  "POST /partners/:owner_slug/test_clock/advance": 422,
  // Public: the token endpoint refuses `{}` as a bad request; the rest serve documents.
  "POST /token": 400,
  "GET /.well-known/jwks.json": 200,
  "GET /openapi.json": 200,
  "GET /docs": 200,
  "GET /docs/assets/swagger-ui-bundle.js": 200,
  "GET /docs/assets/swagger-ui.css": 200,
  "GET /docs/assets/index.css": 200,
  "GET /docs/assets/favicon-32x32.png": 200,
  "GET /docs/assets/favicon-16x16.png": 200,
  "GET /docs/assets/reference.js": 200,
}
const routeKey = (route: Route<unknown>) => `${route.method} ${route.path}`

const everyPartnerScope = gatewayScopes.partner.join(" ")

type Caller = "client" | "clientWithoutProvider" | "ingestClient"

/** The callers every case draws on, made once for the file. */
class Callers extends Context.Service<
  Callers,
  {
    /** Granted every partner scope, `GRANTED_OWNER` and `PROVIDER`. */
    readonly client: CreatedClient
    /** Every partner scope and the granted owner, but no provider. */
    readonly clientWithoutProvider: CreatedClient
    readonly ingestClient: CreatedClient
    /**
     * A token of one of the callers from its gateway's `/token`, with every granted scope or just `scope`; asked
     * once per caller and scope, since the guard is under test here, not the token endpoint.
     */
    readonly token: (caller: Caller, scope?: string) => Effect.Effect<string>
  }
>()("test/auth/Gateway/Callers") {
  static readonly layer = Layer.effect(
    Callers,
    Effect.gen(function* () {
      yield* createOwner(GRANTED_OWNER)
      yield* createOwner(UNGRANTED_OWNER)
      const clients = {
        client: yield* createClient({ gateway: "partner", owners: [GRANTED_OWNER], provider: PROVIDER }),
        clientWithoutProvider: yield* createClient({ gateway: "partner", owners: [GRANTED_OWNER] }),
        ingestClient: yield* createClient({ gateway: "ingest" }),
      }
      const context = yield* Effect.context<AppConfig | ListeningPorts>()
      const tokens = new Map<string, string>()
      const token = (caller: Caller, scope?: string) => {
        const key = `${caller} ${scope ?? "*"}`
        const known = tokens.get(key)
        if (known !== undefined) return Effect.succeed(known)
        return obtainToken(caller === "ingestClient" ? "ingest" : "partner", clients[caller], scope).pipe(
          Effect.tap((issued) => Effect.sync(() => tokens.set(key, issued))),
          Effect.provideContext(context),
        )
      }
      return { ...clients, token }
    }),
  )
}

interface Case {
  readonly name: string
  readonly appliesTo?: (route: Route<unknown>) => boolean
  /** The Authorization header to send (none when undefined). */
  readonly authorization: (
    route: GuardedRoute,
  ) => Effect.Effect<string | undefined, never, Callers | Auth | Db | AppConfig | ListeningPorts>
  readonly path?: (route: Route<unknown>) => string
  readonly status: number
  readonly body: string
}

const bearerOf = <R>(token: Effect.Effect<string, never, R>) => Effect.map(token, (t) => `Bearer ${t}`)

/** A token of a fresh, fully granted client carrying the route's scope, taken before `change` alters the client. */
const tokenThenChange = <E, R>(
  guarded: { readonly scope: string },
  change: (clientId: string) => Effect.Effect<unknown, E, R>,
) =>
  Effect.gen(function* () {
    const client = yield* createClient({ gateway: "partner", owners: [GRANTED_OWNER], provider: PROVIDER })
    const token = yield* obtainToken("partner", client, guarded.scope)
    yield* change(client.clientId)
    return `Bearer ${token}`
  })

/** A token of the granted client carrying the route's scope: the cases then vary only the path. */
const grantedClientToken = (guarded: { readonly scope: string }) =>
  Callers.use(({ token }) => bearerOf(token("client", guarded.scope)))

const cases: ReadonlyArray<Case> = [
  { name: "no token", authorization: () => Effect.succeed(undefined), status: 401, body: UNAUTHORIZED },
  {
    name: "a malformed token",
    authorization: () => Effect.succeed("Bearer not-a-jwt"),
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: "a valid token without the Bearer scheme",
    authorization: () => Callers.use(({ token }) => token("client")),
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: "an expired token",
    authorization: () =>
      Callers.use(({ client }) => bearerOf(expiredToken(client.clientId, everyPartnerScope))),
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: "a token signed by another key",
    authorization: () =>
      Callers.use(({ client }) => bearerOf(tokenSignedByAnotherKey(client.clientId, everyPartnerScope))),
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: "a token whose claims were changed after signing",
    authorization: (guarded) =>
      Effect.gen(function* () {
        const token = yield* Callers.use(({ token }) => token("client", guarded.scope))
        const [header, , signature] = token.split(".")
        const claims = { ...decodeJwt(token), scope: everyPartnerScope }
        const forged = Buffer.from(JSON.stringify(claims)).toString("base64url")
        return `Bearer ${header}.${forged}.${signature}`
      }),
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: "a token from the ingestion gateway",
    authorization: () => Callers.use(({ token }) => bearerOf(token("ingestClient"))),
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: "a token of a client revoked after it was issued",
    authorization: (guarded) =>
      tokenThenChange(guarded, (clientId) =>
        Effect.orDie(Effect.flatMap(Effect.service(Auth), (auth) => auth.revokeClient(clientId))),
      ),
    status: 401,
    body: UNAUTHORIZED,
  },
  {
    name: "a token lacking the route's scope",
    authorization: (guarded) =>
      Callers.use(({ token }) =>
        bearerOf(token("client", gatewayScopes.partner.filter((s) => s !== guarded.scope).join(" "))),
      ),
    status: 403,
    body: FORBIDDEN,
  },
  {
    // No API removes a scope from a client yet; operators would do what this SQL does.
    name: "a token carrying a scope since removed from the client",
    authorization: (guarded) =>
      tokenThenChange(guarded, (clientId) =>
        Effect.flatMap(Effect.service(Db), (db) =>
          db.query(
            (sql) =>
              sql`update clients set scopes = array_remove(scopes, ${guarded.scope}) where id = ${clientId}`,
          ),
        ),
      ),
    status: 403,
    body: FORBIDDEN,
  },
  {
    name: "an owner not granted to the client",
    appliesTo: isOwnerRoute,
    authorization: grantedClientToken,
    path: (route) => pathOf(route, { owner_slug: UNGRANTED_OWNER }),
    status: 403,
    body: FORBIDDEN,
  },
  {
    name: "an unknown owner slug",
    appliesTo: isOwnerRoute,
    authorization: grantedClientToken,
    path: (route) => pathOf(route, { owner_slug: "no-such-owner" }),
    status: 404,
    body: OWNER_NOT_FOUND,
  },
  {
    name: "a provider that is not the client's",
    appliesTo: isProviderRoute,
    authorization: grantedClientToken,
    path: (route) => pathOf(route, { provider: "other-pms" }),
    status: 403,
    body: FORBIDDEN,
  },
  {
    name: "a client granted no provider",
    appliesTo: isProviderRoute,
    authorization: (guarded) =>
      Callers.use(({ token }) => bearerOf(token("clientWithoutProvider", guarded.scope))),
    status: 403,
    body: FORBIDDEN,
  },
]

const service = authService()
const callers = Callers.layer.pipe(Layer.provideMerge(service.layer))

const portOf = (guarded: GuardedRoute) =>
  guarded.served === "fixture" ? fixturePort : gatewayPort("partner-api")

describe("the partner gateway's guard", () => {
  it("has non-public routes to check (the real ones and the fixtures)", () => {
    assert.isAbove(guardedRoutes.length, 0)
    for (const fixture of fixtureRoutes) {
      assert.isTrue(
        guardedRoutes.some((g) => g.route === fixture),
        `${fixture.method} ${fixture.path} is checked`,
      )
    }
  })

  layer(callers, { excludeTestServices: true })((it) => {
    for (const guarded of guardedRoutes) {
      const { route } = guarded
      describe(`${route.method} ${route.path} (scope ${guarded.scope})`, () => {
        for (const c of cases.filter((c) => c.appliesTo?.(route) ?? true)) {
          it.effect(`answers ${c.name} with ${c.status} and exactly ${c.body}`, () =>
            Effect.gen(function* () {
              const authorization = yield* c.authorization(guarded)
              const answer = yield* httpRequest(
                yield* portOf(guarded),
                c.path?.(route) ?? pathOf(route),
                requestInit(route, authorization),
              )
              assert.strictEqual(answer.status, c.status)
              assert.strictEqual(answer.text, c.body)
            }),
          )
        }

        it.effect(
          "lets through a token carrying only the route's scope, for a granted owner or provider",
          () =>
            Effect.gen(function* () {
              const { client, token: tokenOf } = yield* Callers
              const token = yield* tokenOf("client", guarded.scope)
              const answer = yield* httpRequest(
                yield* portOf(guarded),
                pathOf(route),
                requestInit(route, `Bearer ${token}`),
              )
              if (guarded.served === "fixture") {
                assert.strictEqual(answer.status, 200)
                assert.strictEqual(JSON.parse(answer.text).client_id, client.clientId)
              } else {
                assert.strictEqual(answer.status, PASSED_GUARD[routeKey(route)], answer.text)
                assert.notStrictEqual(answer.text, OWNER_NOT_FOUND)
              }
            }),
        )
      })
    }

    for (const route of publicRoutes) {
      it.effect(`serves the public route ${route.method} ${route.path} without a token`, () =>
        Effect.gen(function* () {
          const answer = yield* httpRequest(
            yield* gatewayPort("partner-api"),
            pathOf(route),
            requestInit(route, undefined),
          )
          assert.strictEqual(answer.status, PASSED_GUARD[routeKey(route)], answer.text)
        }),
      )
    }

    it("knows what every route answers once past the guard", () => {
      assert.deepStrictEqual(realRoutes.map(routeKey).sort(), Object.keys(PASSED_GUARD).sort())
    })

    it.effect("has the ingestion gateway refuse a partner-gateway token and accept its own", () =>
      Effect.gen(function* () {
        const { client, ingestClient } = yield* Callers
        const port = yield* ingestFixturePort
        const post = (token: string) =>
          httpRequest(port, ingestFixtureRoute.path, requestInit(ingestFixtureRoute, `Bearer ${token}`))
        const partnerToken = yield* post(yield* obtainToken("partner", client))
        assert.strictEqual(partnerToken.status, 401)
        assert.strictEqual(partnerToken.text, UNAUTHORIZED)
        const ingestToken = yield* post(yield* obtainToken("ingest", ingestClient))
        assert.strictEqual(ingestToken.status, 202, ingestToken.text)
      }),
    )
  })
})

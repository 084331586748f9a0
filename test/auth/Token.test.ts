import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect, Layer, References } from "effect"
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from "jose"
import { Auth } from "../../backend/auth/Auth.ts"
import type { Gateway } from "../../backend/auth/Domain.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { metrics } from "../../backend/platform/Observability.ts"
import {
  ACCESS_DENIED,
  type Answer,
  audienceOf,
  authEnv,
  authService,
  bearer,
  createClient,
  createOwner,
  type CreatedClient,
  fixturePort,
  gatewayPort,
  httpRequest,
  requestToken,
  signToken,
  type TokenFields,
  UNAUTHORIZED,
} from "../support/Auth.ts"
import { advanceHeldClock, heldClock, holdClock } from "../support/HeldClock.ts"

const OWNER = "token-owner"
const GRANTED = ["properties:write", "prospects:read", "webhooks:manage"]

const env = authEnv()
const service = authService({
  env,
  references: Layer.merge(
    Layer.succeed(References.MinimumLogLevel, "Warn"),
    Layer.succeed(Clock.Clock, heldClock),
  ),
}).layer

const portOf = (gateway: Gateway) => gatewayPort(gateway === "partner" ? "partner-api" : "ingest-api")

/** The client-credentials fields for `client` on `gateway`, with that gateway's audience. */
const credentials = (gateway: Gateway, client: CreatedClient, extra: TokenFields = {}) =>
  Effect.map(audienceOf(gateway), (audience): TokenFields => ({
    grant_type: "client_credentials",
    client_id: client.clientId,
    client_secret: client.clientSecret,
    audience,
    ...extra,
  }))

const tokenRequest = (
  gateway: Gateway,
  fields: TokenFields,
  options: Parameters<typeof requestToken>[2] = {},
) => Effect.flatMap(portOf(gateway), (port) => requestToken(port, fields, options))

const partnerClient = (scopes: ReadonlyArray<string> = GRANTED) =>
  createClient({ gateway: "partner", scopes, owners: [OWNER] })

interface TokenBody {
  readonly access_token: string
  readonly token_type: string
  readonly scope: string
  readonly expires_in: number
}

const tokenOf = (answer: Answer) => {
  assert.strictEqual(answer.status, 200, answer.text)
  return JSON.parse(answer.text) as TokenBody
}

/** Token requests this process answered 429 for a source's failures, on the partner gateway. */
const throttledByFailures = Effect.promise(() => metrics.tokenRequestsThrottled.get()).pipe(
  Effect.map(
    (m) => m.values.find((v) => v.labels.gateway === "partner" && v.labels.reason === "failures")?.value ?? 0,
  ),
)

/** Client secrets this process checked in `lane` on the partner gateway. */
const secretChecks = (lane: "client" | "stranger") =>
  Effect.promise(() => metrics.tokenSecretChecks.get()).pipe(
    Effect.map(
      (m) => m.values.find((v) => v.labels.gateway === "partner" && v.labels.lane === lane)?.value ?? 0,
    ),
  )

const jwks = Effect.flatMap(portOf("partner"), (port) => httpRequest(port, "/.well-known/jwks.json")).pipe(
  Effect.map((answer) => JSON.parse(answer.text) as JSONWebKeySet),
)

/** The fixture owner route needs `properties:write` and an owner granted to the client. */
const ownerFixture = (token: string) =>
  Effect.flatMap(fixturePort, (port) => httpRequest(port, `/partners/${OWNER}/fixture`, bearer(token)))

/** An RFC 6749 §5.2 error body: exactly `error` and `error_description`. */
const assertTokenError = (answer: Answer, status: number, error: string, description: string) => {
  assert.strictEqual(answer.status, status, answer.text)
  assert.deepStrictEqual(JSON.parse(answer.text), { error, error_description: description })
}

const REQUIRED_STRINGS = "grant_type, client_id, client_secret and audience are required strings."

describe("POST /token", () => {
  layer(Layer.effectDiscard(createOwner(OWNER)).pipe(Layer.provideMerge(service)), {
    excludeTestServices: true,
  })((it) => {
    for (const encoding of ["json", "form"] as const) {
      it.effect(`issues a Bearer token with every granted scope for a ${encoding} body`, () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const answer = yield* tokenRequest("partner", yield* credentials("partner", client), { encoding })
          const body = tokenOf(answer)
          assert.sameMembers(Object.keys(body), ["access_token", "token_type", "scope", "expires_in"])
          assert.strictEqual(body.token_type, "Bearer")
          assert.sameMembers(body.scope.split(" "), GRANTED)
          assert.strictEqual(body.expires_in, 8600)
          assert.include(answer.headers.get("cache-control") ?? "", "no-store")
          assert.strictEqual((yield* ownerFixture(body.access_token)).status, 200)
        }),
      )
    }

    it.effect("accepts the client id and secret as HTTP Basic credentials", () =>
      Effect.gen(function* () {
        const client = yield* partnerClient()
        const basic = (secret: string) => ({
          authorization: `Basic ${Buffer.from(`${client.clientId}:${secret}`).toString("base64")}`,
        })
        const fields = { grant_type: "client_credentials", audience: yield* audienceOf("partner") }
        const good = yield* tokenRequest("partner", fields, {
          encoding: "form",
          headers: basic(client.clientSecret),
        })
        assert.strictEqual((yield* ownerFixture(tokenOf(good).access_token)).status, 200)
        const bad = yield* tokenRequest("partner", fields, { encoding: "form", headers: basic("wrong") })
        assert.strictEqual(bad.status, 401)
        assert.strictEqual(bad.text, ACCESS_DENIED)
      }),
    )

    it.effect(
      "takes the audience from the token URL's query when the body has none, as the docs page sends it",
      () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const port = yield* portOf("partner")
          const form = new URLSearchParams({
            grant_type: "client_credentials",
            client_id: client.clientId,
            client_secret: client.clientSecret,
          }).toString()
          const post = (audience: string) =>
            httpRequest(port, `/token?audience=${encodeURIComponent(audience)}`, {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: form,
            })
          const good = yield* post(yield* audienceOf("partner"))
          assert.strictEqual((yield* ownerFixture(tokenOf(good).access_token)).status, 200)
          const otherGateways = yield* post(yield* audienceOf("ingest"))
          assert.strictEqual(otherGateways.status, 401)
          assert.strictEqual(otherGateways.text, ACCESS_DENIED)
        }),
    )

    it.effect("answers HTTP Basic credentials that are not form-encoded with 400 invalid_request", () =>
      Effect.gen(function* () {
        const client = yield* partnerClient()
        const fields = { grant_type: "client_credentials", audience: yield* audienceOf("partner") }
        for (const credentials of [`${client.clientId}:%ZZ`, `%E0%A4%A:${client.clientSecret}`]) {
          const answer = yield* tokenRequest("partner", fields, {
            encoding: "form",
            headers: { authorization: `Basic ${Buffer.from(credentials).toString("base64")}` },
          })
          assertTokenError(answer, 400, "invalid_request", "The Basic credentials are not form-encoded.")
        }
      }),
    )

    it.effect(
      "signs a JWT with iss, sub, aud, scope, iat = now, exp = iat + 8600 and a random jti under a kid the JWKS lists",
      () =>
        Effect.gen(function* () {
          yield* holdClock
          const client = yield* partnerClient()
          const fields = yield* credentials("partner", client)
          const { access_token } = tokenOf(yield* tokenRequest("partner", fields))
          const claims = decodeJwt(access_token)
          assert.sameMembers(Object.keys(claims), ["scope", "iss", "sub", "aud", "iat", "exp", "jti"])
          assert.strictEqual(claims.iss, env.PUBLIC_BASE_URL)
          assert.strictEqual(claims.sub, client.clientId)
          assert.strictEqual(claims.aud, env.PARTNER_API_AUDIENCE)
          assert.sameMembers(String(claims.scope).split(" "), GRANTED)
          assert.strictEqual(claims.iat, Math.floor(heldClock.currentTimeMillisUnsafe() / 1000))
          assert.strictEqual(claims.exp, claims.iat! + 8600)
          assert.match(claims.jti ?? "", /^[A-Za-z0-9_-]{16}$/)
          assert.notStrictEqual(
            decodeJwt(tokenOf(yield* tokenRequest("partner", fields)).access_token).jti,
            claims.jti,
          )
          const header = decodeProtectedHeader(access_token)
          const { kid, alg } = header
          assert.deepStrictEqual(header, { alg: "ES256", kid: kid!, typ: "JWT" })
          const keySet = yield* jwks
          assert.include(
            keySet.keys.map((k) => k.kid),
            kid,
          )
          // A partner verifying the token with the published keys accepts it.
          const verified = yield* Effect.promise(() =>
            jwtVerify(access_token, createLocalJWKSet(keySet), {
              issuer: env.PUBLIC_BASE_URL!,
              audience: env.PARTNER_API_AUDIENCE!,
            }),
          )
          assert.strictEqual(verified.protectedHeader.alg, alg)
        }).pipe(Effect.scoped),
    )

    it.effect("narrows the token to a requested subset of the granted scopes", () =>
      Effect.gen(function* () {
        const client = yield* partnerClient()
        const narrow = tokenOf(
          yield* tokenRequest("partner", yield* credentials("partner", client, { scope: "prospects:read" })),
        )
        assert.strictEqual(narrow.scope, "prospects:read")
        assert.strictEqual(decodeJwt(narrow.access_token).scope, "prospects:read")
        const refused = yield* ownerFixture(narrow.access_token)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.text, `{"message":"Forbidden"}`)

        const fitting = tokenOf(
          yield* tokenRequest(
            "partner",
            yield* credentials("partner", client, { scope: "properties:write prospects:read" }),
          ),
        )
        assert.sameMembers(fitting.scope.split(" "), ["properties:write", "prospects:read"])
        assert.strictEqual((yield* ownerFixture(fitting.access_token)).status, 200)
      }),
    )

    for (const [scope, outside] of [
      ["units:write", "units:write"],
      ["prospects:read units:write", "units:write"],
      ["ingest:events  no:such prospects:read", "ingest:events no:such"],
      ["no:such", "no:such"],
    ] as const) {
      it.effect(`refuses the scope "${scope}", outside the grant, with 400 invalid_scope`, () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const answer = yield* tokenRequest("partner", yield* credentials("partner", client, { scope }))
          assertTokenError(answer, 400, "invalid_scope", `Scopes not granted to this client: ${outside}.`)
        }),
      )
    }

    const credentialFailures: ReadonlyArray<{
      readonly name: string
      readonly at: Gateway
      readonly fields: Effect.Effect<TokenFields, never, Auth | AppConfig>
    }> = [
      {
        name: "a wrong secret",
        at: "partner",
        fields: Effect.flatMap(partnerClient(), (client) =>
          credentials("partner", client, { client_secret: "not-the-secret" }),
        ),
      },
      {
        name: "an unknown client id",
        at: "partner",
        fields: credentials("partner", { clientId: "cli_no_such_client", clientSecret: "whatever" }),
      },
      {
        name: "a revoked client",
        at: "partner",
        fields: Effect.gen(function* () {
          const client = yield* partnerClient()
          yield* Effect.orDie((yield* Auth).revokeClient(client.clientId))
          return yield* credentials("partner", client)
        }),
      },
      {
        name: "the ingestion gateway's audience",
        at: "partner",
        fields: Effect.gen(function* () {
          const client = yield* partnerClient()
          return yield* credentials("partner", client, { audience: yield* audienceOf("ingest") })
        }),
      },
      {
        name: "an audience of no gateway",
        at: "partner",
        fields: Effect.flatMap(partnerClient(), (client) =>
          credentials("partner", client, { audience: "urn:someone-else" }),
        ),
      },
      {
        name: "a client of the ingestion gateway",
        at: "partner",
        fields: Effect.flatMap(createClient({ gateway: "ingest" }), (client) =>
          credentials("partner", client),
        ),
      },
      {
        name: "a client of the ingestion gateway with the ingestion audience",
        at: "partner",
        fields: Effect.flatMap(createClient({ gateway: "ingest" }), (client) =>
          credentials("ingest", client),
        ),
      },
      {
        name: "a client of the partner gateway",
        at: "ingest",
        fields: Effect.flatMap(partnerClient(), (client) => credentials("ingest", client)),
      },
      {
        name: "a client of the partner gateway with the partner audience",
        at: "ingest",
        fields: Effect.flatMap(partnerClient(), (client) => credentials("partner", client)),
      },
      {
        name: "the partner gateway's audience",
        at: "ingest",
        fields: Effect.gen(function* () {
          const client = yield* createClient({ gateway: "ingest" })
          return yield* credentials("ingest", client, { audience: yield* audienceOf("partner") })
        }),
      },
    ]

    for (const failure of credentialFailures) {
      it.effect(
        `answers ${failure.name} at the ${failure.at} gateway with 401 and exactly ${ACCESS_DENIED}`,
        () =>
          Effect.gen(function* () {
            const answer = yield* tokenRequest(failure.at, yield* failure.fields)
            assert.strictEqual(answer.status, 401)
            assert.strictEqual(answer.text, ACCESS_DENIED)
            assert.include(answer.headers.get("cache-control") ?? "", "no-store")
          }),
      )
    }

    it.effect(
      "after 5 failed attempts refuses that client id with 429 and Retry-After, even with the right secret",
      () =>
        Effect.gen(function* () {
          yield* holdClock
          const client = yield* partnerClient()
          const fields = yield* credentials("partner", client)
          for (let attempt = 1; attempt <= 5; attempt++) {
            const answer = yield* tokenRequest("partner", { ...fields, client_secret: "guess" })
            assert.strictEqual(answer.status, 401, `attempt ${attempt}`)
            assert.strictEqual(answer.text, ACCESS_DENIED)
          }
          const throttled = yield* throttledByFailures
          /** The Retry-After of a refused attempt: the block's seconds left, rounded up. */
          const retryAfter = (attempt: TokenFields) =>
            Effect.map(tokenRequest("partner", attempt), (blocked) => {
              assertTokenError(
                blocked,
                429,
                "slow_down",
                "Too many failed attempts for this client id from your address; retry later.",
              )
              return blocked.headers.get("retry-after")
            })
          // The fifth failure blocks that source for one second.
          assert.strictEqual(yield* retryAfter(fields), "1")
          yield* advanceHeldClock(400)
          assert.strictEqual(yield* retryAfter({ ...fields, client_secret: "guess" }), "1")
          assert.strictEqual((yield* throttledByFailures) - throttled, 2)
          // The block ends at its instant: the right secret then gets a token.
          yield* advanceHeldClock(600)
          tokenOf(yield* tokenRequest("partner", fields))
          // The block is per client id: another client of the same partner still gets tokens.
          const other = yield* partnerClient()
          tokenOf(yield* tokenRequest("partner", yield* credentials("partner", other)))
        }).pipe(Effect.scoped),
    )

    it.effect("forgets failed attempts once the client gets a token", () =>
      Effect.gen(function* () {
        yield* holdClock
        const client = yield* partnerClient()
        const fields = yield* credentials("partner", client)
        for (let round = 1; round <= 2; round++) {
          for (let attempt = 1; attempt <= 4; attempt++) {
            const answer = yield* tokenRequest("partner", { ...fields, client_secret: "guess" })
            assert.strictEqual(answer.status, 401, `round ${round}, attempt ${attempt}`)
          }
          tokenOf(yield* tokenRequest("partner", fields))
        }
      }).pipe(Effect.scoped),
    )

    it.effect("issues ingestion tokens to ingest clients, with the ingestion issuer and audience", () =>
      Effect.gen(function* () {
        const client = yield* createClient({ gateway: "ingest" })
        const body = tokenOf(yield* tokenRequest("ingest", yield* credentials("ingest", client)))
        assert.strictEqual(body.scope, "ingest:events")
        assert.strictEqual(body.expires_in, 8600)
        const claims = decodeJwt(body.access_token)
        assert.strictEqual(claims.iss, env.INGEST_BASE_URL)
        assert.strictEqual(claims.aud, env.INGEST_API_AUDIENCE)
        assert.strictEqual(claims.sub, client.clientId)
        assert.strictEqual(claims.scope, "ingest:events")
      }),
    )

    it.effect("answers a missing field with 400 invalid_request, as JSON and as a form", () =>
      Effect.gen(function* () {
        const client = yield* partnerClient()
        const complete = yield* credentials("partner", client)
        for (const field of ["grant_type", "client_id", "client_secret", "audience"] as const) {
          const { [field]: _, ...rest } = complete
          for (const encoding of ["json", "form"] as const) {
            assertTokenError(
              yield* tokenRequest("partner", rest, { encoding }),
              400,
              "invalid_request",
              REQUIRED_STRINGS,
            )
          }
        }
      }),
    )

    it.effect("answers a body that is not a token request with 400 invalid_request", () =>
      Effect.gen(function* () {
        const port = yield* portOf("partner")
        const client = yield* partnerClient()
        const complete = yield* credentials("partner", client)
        const notJson = "The body is neither JSON nor a form."
        for (const [body, description] of [
          ["", notJson],
          ["{not json", notJson],
          ["[]", REQUIRED_STRINGS],
          ["null", REQUIRED_STRINGS],
          [JSON.stringify({ ...complete, client_secret: 42 }), REQUIRED_STRINGS],
        ] as const) {
          const answer = yield* httpRequest(port, "/token", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          })
          assertTokenError(answer, 400, "invalid_request", description)
        }
      }),
    )

    for (const grantType of ["password", "authorization_code", "refresh_token", "CLIENT_CREDENTIALS"]) {
      it.effect(`answers grant_type ${grantType} with 400 unsupported_grant_type`, () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const answer = yield* tokenRequest(
            "partner",
            yield* credentials("partner", client, { grant_type: grantType }),
          )
          assertTokenError(
            answer,
            400,
            "unsupported_grant_type",
            "Only the client_credentials grant is supported.",
          )
        }),
      )
    }

    it.effect(
      "issues tokens signed by a new kid after a key rotation, and keeps honouring older tokens",
      () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const fields = yield* credentials("partner", client)
          const before = tokenOf(yield* tokenRequest("partner", fields)).access_token
          const oldKid = decodeProtectedHeader(before).kid

          const newKid = yield* (yield* Auth).rotateKeys
          assert.notStrictEqual(newKid, oldKid)
          const after = tokenOf(yield* tokenRequest("partner", fields)).access_token
          assert.strictEqual(decodeProtectedHeader(after).kid, newKid)

          assert.strictEqual((yield* ownerFixture(before)).status, 200)
          assert.strictEqual((yield* ownerFixture(after)).status, 200)
          assert.includeMembers(
            (yield* jwks).keys.map((k) => k.kid),
            [oldKid, newKid],
          )
        }),
    )

    it.effect(
      "reads the requested scope as words: blank asks for the whole grant, a repeat counts once",
      () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const scopeOf = (scope: string) =>
            credentials("partner", client, { scope }).pipe(
              Effect.flatMap((fields) => tokenRequest("partner", fields)),
              Effect.map(tokenOf),
            )
          for (const blank of ["", " ", "\t \n"])
            assert.sameMembers((yield* scopeOf(blank)).scope.split(" "), GRANTED)
          assert.strictEqual((yield* scopeOf(" prospects:read\t\tprospects:read ")).scope, "prospects:read")
          const two = yield* scopeOf("prospects:read   properties:write prospects:read")
          assert.strictEqual(two.scope, "prospects:read properties:write")
          assert.strictEqual(decodeJwt(two.access_token).scope, "prospects:read properties:write")
        }),
    )

    it.effect(
      "checks a client's secret in its own lane until its source fails for its id, everyone else's as a stranger's",
      () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const fields = yield* credentials("partner", client)
          /** The lane the secret of `attempt` was checked in, and the status it got. */
          const laneOf = (attempt: TokenFields) =>
            Effect.gen(function* () {
              const before = {
                client: yield* secretChecks("client"),
                stranger: yield* secretChecks("stranger"),
              }
              const { status } = yield* tokenRequest("partner", attempt)
              const clientChecks = (yield* secretChecks("client")) - before.client
              const strangerChecks = (yield* secretChecks("stranger")) - before.stranger
              assert.strictEqual(clientChecks + strangerChecks, 1)
              return { lane: clientChecks === 1 ? "client" : "stranger", status }
            })
          assert.deepStrictEqual(yield* laneOf(fields), { lane: "client", status: 200 })
          assert.deepStrictEqual(yield* laneOf({ ...fields, client_secret: "guess" }), {
            lane: "client",
            status: 401,
          })
          // That source failed for that id: its next check waits with the strangers', even with the right secret.
          assert.deepStrictEqual(yield* laneOf(fields), { lane: "stranger", status: 200 })
          assert.deepStrictEqual(yield* laneOf(fields), { lane: "client", status: 200 })

          const unknown = yield* credentials("partner", { clientId: "cli_no_such_lane", clientSecret: "x" })
          assert.deepStrictEqual(yield* laneOf(unknown), { lane: "stranger", status: 401 })
          const ingest = yield* credentials("partner", yield* createClient({ gateway: "ingest" }))
          assert.deepStrictEqual(yield* laneOf(ingest), { lane: "stranger", status: 401 })
          const revoked = yield* partnerClient()
          yield* Effect.orDie((yield* Auth).revokeClient(revoked.clientId))
          assert.deepStrictEqual(yield* laneOf(yield* credentials("partner", revoked)), {
            lane: "stranger",
            status: 401,
          })
        }),
    )

    it.effect("honours a token until the second it expires, also one it verified before", () =>
      Effect.gen(function* () {
        yield* holdClock
        const client = yield* partnerClient()
        const fields = yield* credentials("partner", client)
        const used = tokenOf(yield* tokenRequest("partner", fields)).access_token
        const unused = tokenOf(yield* tokenRequest("partner", fields)).access_token
        assert.strictEqual((yield* ownerFixture(used)).status, 200)
        const expiresAt = decodeJwt(used).exp! * 1000
        yield* advanceHeldClock(expiresAt - heldClock.currentTimeMillisUnsafe() - 1)
        assert.strictEqual((yield* ownerFixture(used)).status, 200)
        yield* advanceHeldClock(1)
        for (const token of [used, unused]) {
          const expired = yield* ownerFixture(token)
          assert.strictEqual(expired.status, 401)
          assert.strictEqual(expired.text, UNAUTHORIZED)
        }
      }).pipe(Effect.scoped),
    )

    it.effect(
      "refuses a token signed with its own key but for another gateway, or without an expiry, issue time or subject",
      () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const signed = (options: Omit<Parameters<typeof signToken>[0], "clientId" | "scope">) =>
            signToken({ clientId: client.clientId, scope: GRANTED.join(" "), ...options })
          assert.strictEqual((yield* ownerFixture(yield* signed({}))).status, 200)
          for (const [name, token] of [
            ["the ingestion issuer", yield* signed({ issuerOf: "ingest" })],
            ["the ingestion audience", yield* signed({ audienceOf: "ingest" })],
            ["no exp", yield* signed({ without: ["exp"] })],
            ["no iat", yield* signed({ without: ["iat"] })],
            ["no sub", yield* signed({ without: ["sub"] })],
            ["not a JWT", "not-a-jwt"],
          ] as const) {
            const refused = yield* ownerFixture(token)
            assert.strictEqual(refused.status, 401, name)
            assert.strictEqual(refused.text, UNAUTHORIZED, name)
          }
        }),
    )

    it.effect("refuses a token signed with its own key whose issue time lies more than a minute ahead", () =>
      Effect.gen(function* () {
        const client = yield* partnerClient()
        const issuedAhead = (seconds: number) =>
          signToken({
            clientId: client.clientId,
            scope: GRANTED.join(" "),
            issuedAt: seconds,
            expiresAt: seconds + 600,
          })
        assert.strictEqual((yield* ownerFixture(yield* issuedAhead(30))).status, 200)
        const refused = yield* ownerFixture(yield* issuedAhead(3600))
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.text, UNAUTHORIZED)
      }),
    )

    it.effect("refuses a token signed with its own key that lives longer than the tokens it issues", () =>
      Effect.gen(function* () {
        const client = yield* partnerClient()
        const ttl = (yield* AppConfig).tokenTtlSeconds
        const living = (seconds: number) =>
          signToken({ clientId: client.clientId, scope: GRANTED.join(" "), expiresAt: seconds })
        assert.strictEqual((yield* ownerFixture(yield* living(ttl))).status, 200)
        for (const seconds of [ttl + 1, 100 * 365 * 86_400]) {
          const refused = yield* ownerFixture(yield* living(seconds))
          assert.strictEqual(refused.status, 401, String(seconds))
          assert.strictEqual(refused.text, UNAUTHORIZED, String(seconds))
        }
      }),
    )

    it.effect("grants no scope for a scope claim that is not text", () =>
      Effect.gen(function* () {
        const client = yield* partnerClient()
        const refused = yield* ownerFixture(yield* signToken({ clientId: client.clientId, scope: 42 }))
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.text, `{"message":"Forbidden"}`)
      }),
    )
  })
})

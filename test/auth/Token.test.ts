import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect, Layer, References } from "effect"
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from "jose"
import { Auth } from "../../backend/auth/Auth.ts"
import type { Gateway } from "../../backend/auth/Domain.ts"
import type { AppConfig } from "../../backend/platform/Config.ts"
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
  type TokenFields,
} from "../support/Auth.ts"
import { heldClock, holdClock } from "../support/HeldClock.ts"

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

const jwks = Effect.flatMap(portOf("partner"), (port) => httpRequest(port, "/.well-known/jwks.json")).pipe(
  Effect.map((answer) => JSON.parse(answer.text) as JSONWebKeySet),
)

/** The fixture owner route needs `properties:write` and an owner granted to the client. */
const ownerFixture = (token: string) =>
  Effect.flatMap(fixturePort, (port) => httpRequest(port, `/partners/${OWNER}/fixture`, bearer(token)))

/** An RFC 6749 §5.2 error body: exactly `error` and `error_description`. */
const assertTokenError = (answer: Answer, status: number, error: string) => {
  assert.strictEqual(answer.status, status, answer.text)
  const body = JSON.parse(answer.text) as Record<string, unknown>
  assert.sameMembers(Object.keys(body), ["error", "error_description"])
  assert.strictEqual(body.error, error)
  assert.isString(body.error_description)
}

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
          assertTokenError(answer, 400, "invalid_request")
        }
      }),
    )

    it.effect(
      "signs a JWT with iss, sub, aud, scope, iat and exp = iat + 8600 under a kid the JWKS lists",
      () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const { access_token } = tokenOf(
            yield* tokenRequest("partner", yield* credentials("partner", client)),
          )
          const claims = decodeJwt(access_token)
          assert.strictEqual(claims.iss, env.PUBLIC_BASE_URL)
          assert.strictEqual(claims.sub, client.clientId)
          assert.strictEqual(claims.aud, env.PARTNER_API_AUDIENCE)
          assert.sameMembers(String(claims.scope).split(" "), GRANTED)
          assert.isNumber(claims.iat)
          assert.strictEqual(claims.exp, claims.iat! + 8600)
          const { kid, alg } = decodeProtectedHeader(access_token)
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
        }),
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

    for (const scope of ["units:write", "prospects:read units:write", "ingest:events", "no:such"]) {
      it.effect(`refuses the scope "${scope}", outside the grant, with 400 invalid_scope`, () =>
        Effect.gen(function* () {
          const client = yield* partnerClient()
          const answer = yield* tokenRequest("partner", yield* credentials("partner", client, { scope }))
          assertTokenError(answer, 400, "invalid_scope")
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
          for (const attempt of [fields, { ...fields, client_secret: "guess" }]) {
            const blocked = yield* tokenRequest("partner", attempt)
            assertTokenError(blocked, 429, "slow_down")
            assert.match(blocked.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/)
          }
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
            assertTokenError(yield* tokenRequest("partner", rest, { encoding }), 400, "invalid_request")
          }
        }
      }),
    )

    it.effect("answers a body that is not a token request with 400 invalid_request", () =>
      Effect.gen(function* () {
        const port = yield* portOf("partner")
        const client = yield* partnerClient()
        const complete = yield* credentials("partner", client)
        for (const body of [
          "",
          "{not json",
          "[]",
          "null",
          JSON.stringify({ ...complete, client_secret: 42 }),
        ]) {
          const answer = yield* httpRequest(port, "/token", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          })
          assertTokenError(answer, 400, "invalid_request")
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
          assertTokenError(answer, 400, "unsupported_grant_type")
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
  })
})

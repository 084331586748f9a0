import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ClientCredentials, type ModuleOptions } from "simple-oauth2"
import type { Gateway } from "../../backend/auth/Domain.ts"
import {
  ACCESS_DENIED,
  audienceOf,
  authService,
  bearer,
  createClient,
  createOwner,
  type CreatedClient,
  FORBIDDEN,
  fixturePort,
  gatewayPort,
  httpRequest,
  UNAUTHORIZED,
} from "../support/Auth.ts"

const OWNER = "oauth-owner"

/** How the library sends the client's credentials: HTTP Basic (its default), or in a form or JSON body. */
type ClientAuthentication = "basic" | "form body" | "json body"

const clientOptions: Record<ClientAuthentication, ModuleOptions["options"]> = {
  basic: {},
  "form body": { authorizationMethod: "body", bodyFormat: "form" },
  "json body": { authorizationMethod: "body", bodyFormat: "json" },
}

/** simple-oauth2's client-credentials grant against a gateway's `/token`, asking for that gateway's audience. */
const libraryToken = (
  gateway: Gateway,
  client: CreatedClient,
  options: { readonly authentication?: ClientAuthentication; readonly scope?: string } = {},
) =>
  Effect.gen(function* () {
    const port = yield* gatewayPort(gateway === "partner" ? "partner-api" : "ingest-api")
    const audience = yield* audienceOf(gateway)
    const oauth = new ClientCredentials({
      client: { id: client.clientId, secret: client.clientSecret },
      auth: { tokenHost: `http://127.0.0.1:${port}`, tokenPath: "/token" },
      options: clientOptions[options.authentication ?? "form body"],
    })
    const accessToken = yield* Effect.tryPromise(() =>
      oauth.getToken({ audience, ...(options.scope === undefined ? {} : { scope: options.scope }) }),
    )
    return accessToken.token as { access_token: string; scope: string; expires_in: number }
  })

/** The fixture owner route: needs `properties:write` and an owner granted to the client. */
const ownerFixture = (token: string) =>
  Effect.flatMap(fixturePort, (port) => httpRequest(port, `/partners/${OWNER}/fixture`, bearer(token)))

const service = Layer.effectDiscard(createOwner(OWNER)).pipe(Layer.provideMerge(authService().layer))

describe("an OAuth 2.0 client library (simple-oauth2)", () => {
  layer(service, { excludeTestServices: true })((it) => {
    for (const authentication of ["form body", "json body", "basic"] as const) {
      it.effect(
        `obtains a token with the ${authentication} client authentication that opens a protected route`,
        () =>
          Effect.gen(function* () {
            const client = yield* createClient({ gateway: "partner", owners: [OWNER] })
            const token = yield* libraryToken("partner", client, { authentication })
            assert.strictEqual(token.expires_in, 8600)
            const answer = yield* ownerFixture(token.access_token)
            assert.strictEqual(answer.status, 200)
            assert.strictEqual(JSON.parse(answer.text).client_id, client.clientId)
          }),
      )
    }

    it.effect("asks for a subset of scopes and gets a token that opens only routes of those scopes", () =>
      Effect.gen(function* () {
        const client = yield* createClient({ gateway: "partner", owners: [OWNER] })
        const narrow = yield* libraryToken("partner", client, { scope: "prospects:read" })
        assert.strictEqual(narrow.scope, "prospects:read")
        const refused = yield* ownerFixture(narrow.access_token)
        assert.strictEqual(refused.status, 403)
        assert.strictEqual(refused.text, FORBIDDEN)
        const fitting = yield* libraryToken("partner", client, { scope: "properties:write" })
        assert.strictEqual((yield* ownerFixture(fitting.access_token)).status, 200)
      }),
    )

    it.effect("gets a token from the ingestion gateway that the partner gateway refuses with 401", () =>
      Effect.gen(function* () {
        const client = yield* createClient({ gateway: "ingest" })
        const token = yield* libraryToken("ingest", client)
        assert.strictEqual(token.scope, "ingest:events")
        const answer = yield* ownerFixture(token.access_token)
        assert.strictEqual(answer.status, 401)
        assert.strictEqual(answer.text, UNAUTHORIZED)
      }),
    )

    it.effect("reports a wrong secret as the token endpoint's 401 access_denied", () =>
      Effect.gen(function* () {
        const client = yield* createClient({ gateway: "partner", owners: [OWNER] })
        const failure = yield* Effect.flip(
          libraryToken("partner", { ...client, clientSecret: "wrong" }, { authentication: "basic" }),
        )
        const error = failure.cause as { output?: { statusCode?: number }; data?: { payload?: unknown } }
        assert.strictEqual(error.output?.statusCode, 401)
        assert.strictEqual(JSON.stringify(error.data?.payload), ACCESS_DENIED)
      }),
    )
  })
})

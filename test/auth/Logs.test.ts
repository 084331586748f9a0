import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Auth } from "../../backend/auth/Auth.ts"
import {
  audienceOf,
  authEnv,
  authService,
  bearer,
  createClient,
  createOwner,
  fixturePort,
  gatewayPort,
  httpRequest,
  requestToken,
  type TokenFields,
} from "../support/Auth.ts"
import { captureLogs } from "../support/Logs.ts"

const OWNER = "logs-owner"

/** Every line the service and the test log, at every level, as the JSON lines production writes. */
const { lines, layer: captured } = captureLogs("All")

const env = authEnv()
const service = Layer.effectDiscard(createOwner(OWNER)).pipe(
  Layer.provideMerge(authService({ env, references: captured }).layer),
)

describe("log lines of an authentication flow", () => {
  layer(service, { excludeTestServices: true })((it) => {
    it.effect("never carry a client secret, an access token or the master key", () =>
      Effect.gen(function* () {
        const partner = yield* gatewayPort("partner-api")
        const ingest = yield* gatewayPort("ingest-api")
        const fixture = yield* fixturePort
        const client = yield* createClient({ gateway: "partner", owners: [OWNER] })
        const ingestClient = yield* createClient({ gateway: "ingest" })
        const fields: TokenFields = {
          grant_type: "client_credentials",
          client_id: client.clientId,
          client_secret: client.clientSecret,
          audience: yield* audienceOf("partner"),
        }
        const secrets = [client.clientSecret, ingestClient.clientSecret]
        const tokens: Array<string> = []
        const token = (answer: { readonly status: number; readonly text: string }) => {
          assert.strictEqual(answer.status, 200, answer.text)
          const accessToken = (JSON.parse(answer.text) as { access_token: string }).access_token
          tokens.push(accessToken)
          return accessToken
        }

        const good = token(yield* requestToken(partner, fields))
        token(yield* requestToken(partner, { ...fields, scope: "prospects:read" }, { encoding: "form" }))
        const basic = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString("base64")}`
        const { client_id: _, client_secret: __, ...withoutCredentials } = fields
        token(yield* requestToken(partner, withoutCredentials, { headers: { authorization: basic } }))
        const ingestToken = token(
          yield* requestToken(ingest, {
            grant_type: "client_credentials",
            client_id: ingestClient.clientId,
            client_secret: ingestClient.clientSecret,
            audience: yield* audienceOf("ingest"),
          }),
        )

        // Refused requests that carry a secret: wrong gateway, wrong audience, wrong grant, scope, body.
        yield* requestToken(ingest, fields)
        yield* requestToken(partner, { ...fields, audience: "urn:elsewhere" })
        yield* requestToken(partner, { ...fields, grant_type: "password" })
        yield* requestToken(partner, { ...fields, scope: "ingest:events" })
        yield* httpRequest(partner, "/token", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: `{"client_id":"${client.clientId}","client_secret":"${client.clientSecret}"`,
        })
        for (let attempt = 0; attempt < 6; attempt++) {
          yield* requestToken(partner, { ...fields, client_secret: `${client.clientSecret}x` })
        }

        // Authenticated requests, accepted and refused, and a key rotation in between.
        yield* httpRequest(fixture, `/partners/${OWNER}/fixture`, bearer(good))
        yield* httpRequest(fixture, `/partners/no-such-owner/fixture`, bearer(good))
        yield* httpRequest(fixture, `/partners/${OWNER}/fixture`, bearer(ingestToken))
        yield* httpRequest(fixture, `/partners/${OWNER}/fixture`, bearer(`${good}x`))
        yield* httpRequest(fixture, `/partners/providers/acme/fixture`, bearer(good))
        yield* httpRequest(fixture, `/partners/${OWNER}/fixture`, {
          headers: { authorization: `Bearer ${client.clientSecret}` },
        })
        yield* (yield* Auth).rotateKeys
        yield* httpRequest(fixture, `/partners/${OWNER}/fixture`, bearer(good))
        yield* Effect.orDie((yield* Auth).revokeClient(client.clientId))
        yield* httpRequest(fixture, `/partners/${OWNER}/fixture`, bearer(good))
        yield* requestToken(partner, fields)

        // The capture works: every request above left lines, annotated with its path.
        assert.isTrue(lines.some((line) => line.includes(`"path":"/token"`)))
        assert.isTrue(lines.some((line) => line.includes(`"path":"/partners/${OWNER}/fixture"`)))
        const forbidden = [
          ...secrets,
          ...tokens,
          // A signature alone is as good as the token to whoever can rebuild the rest.
          ...tokens.map((t) => t.split(".")[2]!),
          env.MASTER_KEY!,
        ]
        for (const line of lines) {
          for (const value of forbidden) assert.notInclude(line, value)
        }
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Auth } from "../../backend/auth/Auth.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { testPlatform } from "../support/TestPlatform.ts"

/** An Auth service of its own, as another process running against the same database has. */
const anotherProcess = Layer.build(Auth.layer).pipe(Effect.map((context) => Context.get(context, Auth)))

describe("signing keys across processes", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect("accepts at once a token signed with a key another process just rotated to", () =>
      Effect.gen(function* () {
        const config = yield* AppConfig
        const first = yield* anotherProcess
        const second = yield* anotherProcess
        const client = yield* first.createClient({ gateway: "partner", name: "rotation" })
        const newKid = yield* second.rotateKeys
        const token = yield* second.issueToken("partner", {
          grant_type: "client_credentials",
          client_id: client.clientId,
          client_secret: client.clientSecret,
          audience: config.audiences.partner,
        })
        const header = JSON.parse(Buffer.from(token.access_token.split(".")[0]!, "base64url").toString())
        assert.strictEqual(header.kid, newKid)
        const caller = yield* first.authenticate("partner", `Bearer ${token.access_token}`)
        assert.strictEqual(caller.clientId, client.clientId)
        assert.isTrue((yield* first.jwks).keys.some((key) => key.kid === newKid))
      }).pipe(Effect.scoped),
    )
  })
})

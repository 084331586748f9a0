import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  authService,
  bearer,
  createClient,
  createOwner,
  fixturePort,
  FORBIDDEN,
  httpRequest,
  obtainToken,
  UNAUTHORIZED,
} from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"

const service = authService()

/** The guarded fixture route of `slug` with `token`. */
const call = (slug: string, token: string) =>
  Effect.flatMap(fixturePort, (port) => httpRequest(port, `/partners/${slug}/fixture`, bearer(token)))

describe("the gateway's cache of client access", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("refuses a client revoked by another process at once, though its access was just used", () =>
      Effect.gen(function* () {
        const slug = yield* createOwner("cache-revoke")
        const client = yield* createClient({ gateway: "partner", owners: [slug] })
        const token = yield* obtainToken("partner", client)
        assert.strictEqual((yield* call(slug, token)).status, 200)
        const run = yield* runCli(service.env, "clients", "revoke", client.clientId)
        assert.strictEqual(run.code, 0, run.stderr)
        const refused = yield* call(slug, token)
        assert.deepStrictEqual([refused.status, refused.text], [401, UNAUTHORIZED])
      }),
    )

    it.effect(
      "lets a client act for an owner granted by another process at once, though it was just refused",
      () =>
        Effect.gen(function* () {
          const slug = yield* createOwner("cache-grant")
          const client = yield* createClient({ gateway: "partner" })
          const token = yield* obtainToken("partner", client)
          const refused = yield* call(slug, token)
          assert.deepStrictEqual([refused.status, refused.text], [403, FORBIDDEN])
          const run = yield* runCli(service.env, "clients", "grant", client.clientId, "--owners", slug)
          assert.strictEqual(run.code, 0, run.stderr)
          assert.strictEqual((yield* call(slug, token)).status, 200)
        }),
    )
  })
})

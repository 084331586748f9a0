import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ConfigInvalid } from "../../backend/platform/Settings.ts"
import { PortalConfig } from "../../backend/portal/Config.ts"

/** The portal's settings as the service reads them from `env`, and nothing else. */
const configFrom = (env: Record<string, string>) =>
  Effect.provide(
    Effect.service(PortalConfig),
    PortalConfig.layer.pipe(Layer.provide(AppConfig.layerFrom(env))),
  )

const configInvalid = (env: Record<string, string>) =>
  configFrom(env).pipe(
    Effect.flip,
    Effect.map((error) => {
      assert.instanceOf(error, ConfigInvalid)
      return error as ConfigInvalid
    }),
  )

describe("PortalConfig", () => {
  it.effect("uses the documented defaults when the environment is empty", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({})
      assert.strictEqual(config.port, 8084)
      assert.strictEqual(config.baseUrl, "http://127.0.0.1:8084")
      assert.strictEqual(config.idleMinutes, 30)
      assert.strictEqual(config.startFreeFailures, 20)
      assert.strictEqual(config.startMaxBlockSeconds, 600)
    }),
  )

  it.effect("bases the default URL on the port, and takes a given URL without its trailing slash", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* configFrom({ PORTAL_PORT: "9090" })).baseUrl, "http://127.0.0.1:9090")
      const given = yield* configFrom({ PORTAL_PORT: "0", PORTAL_BASE_URL: "https://portal.example.com/" })
      assert.strictEqual(given.port, 0)
      assert.strictEqual(given.baseUrl, "https://portal.example.com")
    }),
  )

  it.effect("refuses a port or URL out of form, naming the setting", () =>
    Effect.gen(function* () {
      const port = yield* configInvalid({ PORTAL_PORT: "65536" })
      assert.strictEqual(port.variable, "PORTAL_PORT")
      const url = yield* configInvalid({ PORTAL_BASE_URL: "ftp://portal.example.com" })
      assert.strictEqual(url.variable, "PORTAL_BASE_URL")
      assert.include(url.message, "an http(s) URL")
      for (const [variable, value] of [
        ["PORTAL_IDLE_MINUTES", "0"],
        ["PORTAL_IDLE_MINUTES", "1441"],
        ["PORTAL_IDLE_MINUTES", "ten"],
        ["PORTAL_START_FREE_FAILURES", "0"],
        ["PORTAL_START_MAX_BLOCK_SECONDS", "3601"],
      ] as const) {
        const refused = yield* configInvalid({ [variable]: value })
        assert.strictEqual(refused.variable, variable, value)
      }
      assert.strictEqual((yield* configFrom({ PORTAL_IDLE_MINUTES: "5" })).idleMinutes, 5)
    }),
  )
})

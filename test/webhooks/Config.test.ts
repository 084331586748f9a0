import { randomBytes } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ConfigInvalid } from "../../backend/platform/Settings.ts"
import { WebhookConfig } from "../../backend/webhooks/Config.ts"

const masterKey = randomBytes(32).toString("base64")

/** The webhook settings as the service reads them from `env`, and nothing else. */
const configFrom = (env: Record<string, string>) =>
  Effect.provide(
    Effect.service(WebhookConfig),
    WebhookConfig.layer.pipe(Layer.provide(AppConfig.layerFrom(env))),
  )

const configInvalid = (env: Record<string, string>) =>
  configFrom(env).pipe(
    Effect.flip,
    Effect.map((error) => {
      assert.instanceOf(error, ConfigInvalid)
      return error as ConfigInvalid
    }),
  )

/** Production needs a real payment provider besides MASTER_KEY. */
const PAYMENTS = { PAYMENT_PROVIDER: "stripe", STRIPE_SECRET_KEY: "sk_test_config" }

describe("WebhookConfig", () => {
  it.effect("uses the documented defaults when the environment is empty", () =>
    Effect.gen(function* () {
      const config = yield* configFrom({})
      assert.strictEqual(config.backoffUnitMs, 1000)
      assert.strictEqual(config.timeoutMs, 10_000)
      assert.strictEqual(config.maxAttempts, 25)
      assert.strictEqual(config.rateLimitPerMinute, 1000)
      assert.isTrue(Option.isNone(config.extraCaFile))
      assert.isTrue(config.allowPrivateDestinations)
      assert.strictEqual(config.deliveryRetentionDays, 30)
    }),
  )

  for (const { variable, value, expected } of [
    {
      variable: "WEBHOOK_DELIVERY_RETENTION_DAYS",
      value: "0",
      expected: "a whole number of days from 1 to 3650",
    },
    { variable: "WEBHOOK_MAX_ATTEMPTS", value: "0", expected: "a whole number from 1 to 100" },
    {
      variable: "WEBHOOK_BACKOFF_UNIT_MS",
      value: "1e3",
      expected: "a number of milliseconds from 0.01 to 3600000",
    },
  ]) {
    it.effect(`fails naming ${variable} and its expected form when it is ${JSON.stringify(value)}`, () =>
      Effect.gen(function* () {
        const error = yield* configInvalid({ [variable]: value })
        assert.strictEqual(error.variable, variable)
        assert.include(error.message, variable)
        assert.include(error.message, expected)
        assert.strictEqual(error.received, value)
      }),
    )
  }

  it.effect("refuses private webhook destinations by default in production only", () =>
    Effect.gen(function* () {
      const allowed = (env: Record<string, string>) =>
        Effect.map(configFrom(env), (config) => config.allowPrivateDestinations)
      assert.isFalse(yield* allowed({ SERVICE_ENV: "production", MASTER_KEY: masterKey, ...PAYMENTS }))
      assert.isTrue(yield* allowed({ SERVICE_ENV: "staging", MASTER_KEY: masterKey }))
      assert.isTrue(yield* allowed({ SERVICE_ENV: "development" }))
      assert.isTrue(
        yield* allowed({
          SERVICE_ENV: "production",
          MASTER_KEY: masterKey,
          ...PAYMENTS,
          WEBHOOK_ALLOW_PRIVATE_DESTINATIONS: "true",
        }),
      )
      assert.isFalse(yield* allowed({ WEBHOOK_ALLOW_PRIVATE_DESTINATIONS: "false" }))
    }),
  )

  it.effect("takes a fractional webhook backoff unit, so a test can run the whole schedule quickly", () =>
    Effect.gen(function* () {
      const unit = (value: string) =>
        Effect.map(configFrom({ WEBHOOK_BACKOFF_UNIT_MS: value }), (c) => c.backoffUnitMs)
      assert.strictEqual(yield* unit("0.25"), 0.25)
      assert.strictEqual(yield* unit("250"), 250)
    }),
  )
})

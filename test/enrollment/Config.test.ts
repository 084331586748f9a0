import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { EnrollmentConfig } from "../../backend/enrollment/Config.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { ConfigInvalid } from "../../backend/platform/Settings.ts"

/** The renter pages' settings as the service reads them from `env`, and nothing else. */
const configFrom = (env: Record<string, string>) =>
  Effect.provide(
    Effect.service(EnrollmentConfig),
    EnrollmentConfig.layer.pipe(Layer.provide(AppConfig.layerFrom(env))),
  )

describe("EnrollmentConfig", () => {
  it.effect("uses the documented limits on guessed links when the environment is empty", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* configFrom({}), { linkFreeFailures: 20, linkMaxBlockSeconds: 600 })
      assert.deepStrictEqual(
        yield* configFrom({ ENROLLMENT_LINK_FREE_FAILURES: "50", ENROLLMENT_LINK_MAX_BLOCK_SECONDS: "3600" }),
        { linkFreeFailures: 50, linkMaxBlockSeconds: 3600 },
      )
    }),
  )

  for (const { variable, value, expected } of [
    { variable: "ENROLLMENT_LINK_FREE_FAILURES", value: "0", expected: "a whole number from 1 to 10000" },
    { variable: "ENROLLMENT_LINK_FREE_FAILURES", value: "20x", expected: "a whole number from 1 to 10000" },
    {
      variable: "ENROLLMENT_LINK_MAX_BLOCK_SECONDS",
      value: "3601",
      expected: "a whole number of seconds from 1 to 3600",
    },
  ]) {
    it.effect(`fails naming ${variable} and its expected form when it is ${JSON.stringify(value)}`, () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(configFrom({ [variable]: value }))
        assert.instanceOf(error, ConfigInvalid)
        assert.strictEqual((error as ConfigInvalid).variable, variable)
        assert.include((error as ConfigInvalid).message, expected)
      }),
    )
  }
})

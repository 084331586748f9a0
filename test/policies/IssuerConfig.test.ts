import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { IssuerConfig } from "../../backend/policies/Config.ts"

const load = (env: Record<string, string>) =>
  IssuerConfig.use((config) => Effect.succeed(config)).pipe(
    Effect.provide(IssuerConfig.layer.pipe(Layer.provide(AppConfig.layerFrom(env)))),
    Effect.exit,
  )

const production = { SERVICE_ENV: "production", MASTER_KEY: Buffer.alloc(32, 7).toString("base64") }

describe("the insurer and contact the renter's pages name", () => {
  it.effect("must be set in production, where no example may stand in", () =>
    Effect.gen(function* () {
      for (const [env, variable] of [
        [production, "INSURER_NAME"],
        [{ ...production, INSURER_NAME: "Acme Mutual" }, "SUPPORT_EMAIL"],
        [{ ...production, INSURER_NAME: "Acme Mutual", SUPPORT_EMAIL: "not an address" }, "SUPPORT_EMAIL"],
        [
          { ...production, INSURER_NAME: "Acme Mutual", SUPPORT_EMAIL: "help@acme.example" },
          "INSURER_ADDRESS",
        ],
        [
          {
            ...production,
            INSURER_NAME: "Acme Mutual",
            SUPPORT_EMAIL: "help@acme.example",
            INSURER_ADDRESS: "1 Main St, Springfield, IL 62701",
          },
          "INSURER_LICENSE_NUMBER",
        ],
        [
          {
            ...production,
            INSURER_NAME: "Acme Mutual",
            SUPPORT_EMAIL: "help@acme.example",
            INSURER_ADDRESS: "1 Main St, Springfield, IL 62701",
            INSURER_LICENSE_NUMBER: "IL-12345",
          },
          "DEPOSIT_HOLDER_NAME",
        ],
        [
          {
            ...production,
            INSURER_NAME: "Acme Mutual",
            SUPPORT_EMAIL: "help@acme.example",
            INSURER_ADDRESS: "1 Main St\nSpringfield",
            INSURER_LICENSE_NUMBER: "IL-12345",
            DEPOSIT_HOLDER_NAME: "Acme Deposits, LLC",
          },
          "INSURER_ADDRESS",
        ],
      ] as const) {
        const exit = yield* load(env)
        assert.isTrue(Exit.isFailure(exit), variable)
        assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), variable)
      }
      assert.deepStrictEqual(
        yield* load({
          ...production,
          INSURER_NAME: "Acme Mutual",
          SUPPORT_EMAIL: "help@acme.example",
          SUPPORT_PHONE: "+1 (555) 010-0100",
          INSURER_ADDRESS: "1 Main St, Springfield, IL 62701",
          INSURER_LICENSE_NUMBER: "IL-12345",
          DEPOSIT_HOLDER_NAME: "Acme Deposits, LLC",
        }),
        Exit.succeed({
          insurerName: "Acme Mutual",
          insurerAddress: "1 Main St, Springfield, IL 62701",
          insurerLicenseNumber: "IL-12345",
          depositHolderName: "Acme Deposits, LLC",
          supportEmail: "help@acme.example",
          supportPhone: "+1 (555) 010-0100",
        }),
      )
    }),
  )

  it.effect("has an example outside production", () =>
    Effect.gen(function* () {
      const exit = yield* load({ SERVICE_ENV: "staging", MASTER_KEY: production.MASTER_KEY })
      assert.isTrue(Exit.isSuccess(exit))
      assert.include(Exit.isSuccess(exit) ? exit.value.insurerName : "", "Example")
    }),
  )
})

import { defineConfig } from "vitest/config"

/**
 * The tests a mutation run (`npm run test:mutation`, stryker.config.mjs) runs against each mutant: only the files
 * that exercise the mutated modules, so that each mutant's run stays short.
 */
export default defineConfig({
  test: {
    include: [
      "test/webhooks/Signer.test.ts",
      "test/webhooks/Backoff.test.ts",
      "test/webhooks/EgressAddresses.test.ts",
      "test/contract/FieldLimits.test.ts",
      "test/webhooks/Secrets.test.ts",
      "test/webhooks/SecretRotation.test.ts",
      "test/webhooks/RateLimit.test.ts",
      "test/webhooks/RateWindow.test.ts",
      "test/auth/Token.test.ts",
      "test/auth/Keys.test.ts",
    ],
    globalSetup: ["test/support/GlobalSetup.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})

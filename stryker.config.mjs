/**
 * Mutation testing (`npm run test:mutation`) of the modules where a silent change costs most. Not in CI: one run
 * takes minutes on two cores. The tests it runs are vitest.mutation.config.ts's.
 * @type {import("@stryker-mutator/api/core").PartialStrykerOptions}
 */
export default {
  testRunner: "vitest",
  plugins: ["@stryker-mutator/vitest-runner"],
  vitest: { configFile: "vitest.mutation.config.ts", related: false },
  coverageAnalysis: "perTest",
  concurrency: 2,
  // Line ranges keep a module to the part named: the egress check (not the HTTP client), the rotation (not the
  // rest of the secrets service), the rate limit's side of a claim, and the issuing and verifying of tokens.
  mutate: [
    "backend/webhooks/delivery/Signer.ts",
    "backend/webhooks/delivery/Backoff.ts",
    "backend/webhooks/delivery/Egress.ts:34:1-139:2",
    "backend/contract/FieldLimits.ts",
    "backend/webhooks/endpoints/Secrets.ts:196:1-229:7",
    "backend/webhooks/endpoints/Repo.ts:220:1-232:74",
    "backend/webhooks/delivery/Delivery.ts:171:1-178:48",
    "backend/webhooks/delivery/Delivery.ts:236:1-242:10",
    "backend/auth/Auth.ts:240:1-324:7",
    "backend/auth/Auth.ts:380:1-415:9",
  ],
  reporters: ["clear-text", "progress", "html"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  clearTextReporter: { allowColor: false, logTests: false },
  tempDirName: ".data/stryker-tmp",
  // Module-level code (the egress block lists) runs once at import, before any test: such a mutant needs every
  // test run again, the rate limit's minutes-long ones too. They are left out of the score (docs/testing.md).
  ignoreStatic: true,
  incremental: true,
  incrementalFile: ".data/stryker-incremental.json",
  ignorePatterns: ["/.data", "/dist", "/coverage", "/reports"],
  thresholds: { high: 90, low: 85, break: null },
}

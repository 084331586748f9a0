/**
 * The modules where a silent change costs most, each the files (or line ranges, `file:line:column-line:column`) it
 * is. Ranges keep a module to the part named: the egress check (not the HTTP client), the rotation (not the rest
 * of the secrets service), the rate limit's side of a claim, the issuing and verifying of tokens, and the checks
 * the field limits' schemas run (the table itself is module-level code, which `ignoreStatic` leaves out).
 */
export const MODULES = {
  signer: ["backend/webhooks/delivery/Signer.ts"],
  backoff: ["backend/webhooks/delivery/Backoff.ts"],
  "egress check": ["backend/webhooks/delivery/Egress.ts:40:1-145:2"],
  "field limits": [
    "backend/contract/FieldLimits.ts",
    "backend/platform/Text.ts:7:1-13:2",
    "backend/platform/Text.ts:44:1-87:7",
  ],
  "secret rotation": [
    "backend/webhooks/endpoints/Secrets.ts:123:1-156:7",
    "backend/webhooks/endpoints/Repo.ts:220:1-232:74",
  ],
  "rate limit": [
    "backend/webhooks/delivery/Claims.ts:86:1-86:87",
    "backend/webhooks/delivery/Claims.ts:102:1-103:50",
    "backend/webhooks/delivery/Delivery.ts:80:1-86:12",
  ],
  "token issuer": ["backend/auth/Tokens.ts:49:1-125:7", "backend/auth/Verification.ts:80:1-124:9"],
}

/**
 * Mutation testing (`npm run test:mutation`) of the modules where a silent change costs most. Not in CI: one run
 * takes minutes on two cores. The tests it runs are vitest.mutation.config.ts's.
 * @type {import("@stryker-mutator/api/core").PartialStrykerOptions}
 */
export default {
  testRunner: "vitest",
  plugins: ["@stryker-mutator/vitest-runner", "./infra/mutation-scores.mjs"],
  vitest: { configFile: "vitest.mutation.config.ts", related: false },
  coverageAnalysis: "perTest",
  concurrency: 2,
  // A mutant counts as timed out (detected) only well past its tests' usual time: the machine is shared and slow.
  timeoutMS: 20_000,
  mutate: Object.values(MODULES).flat(),
  reporters: ["clear-text", "progress", "html", "module-scores"],
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

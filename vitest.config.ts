import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/GlobalSetup.ts"],
    pool: "forks",
    isolate: false,
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})

import { defineConfig } from "vitest/config"
import { SlowestFirst } from "./test/support/Sequencer.ts"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/GlobalSetup.ts"],
    setupFiles: ["test/support/Waits.setup.ts"],
    sequence: { sequencer: SlowestFirst },
    pool: "forks",
    isolate: false,
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})

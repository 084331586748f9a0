import { defineConfig } from "vitest/config"
import "./test/support/node20.ts"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/support/node20.ts"],
    pool: "forks",
    maxWorkers: 2,
    // A test spawning CLI processes took over 30 s on a machine with half its CPU time stolen by the hypervisor.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})

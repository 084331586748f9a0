import { defineConfig } from "vitest/config"

/**
 * The fault suite (`npm run test:faults`): each file starts its own Postgres and NATS and the service's processes,
 * and injects faults into them. One file at a time, so a fault's timing is not bent by another file's load.
 */
export default defineConfig({
  test: {
    include: ["test/faults/**/*.fault.ts"],
    setupFiles: ["test/support/Waits.setup.ts"],
    pool: "forks",
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 180_000,
  },
})

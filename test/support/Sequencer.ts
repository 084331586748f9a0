import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * The files that take longest, most of it waiting on real timers, lease expiries and spawned processes rather than
 * on the CPU. Vitest orders by the durations it remembers, which a fresh clone has none of, and then by size,
 * which puts these small files last: started first instead, their waiting overlaps the other worker's work and
 * the two workers finish together. A file missing here only runs later.
 */
const SLOWEST = [
  "test/ingest/Processes.test.ts",
  "test/webhooks/StrandedDeliveries.test.ts",
  "test/webhooks/RateWindow.test.ts",
  "test/webhooks/CrashedAttempts.test.ts",
  "test/webhooks/RateLimit.test.ts",
  "test/webhooks/Processes.test.ts",
  "test/e2e/enrollment.test.ts",
  "test/auth/Gateway.test.ts",
  "test/webhooks/Retry.test.ts",
  "test/platform/Nats.test.ts",
]

const rank = (file: TestSpecification) => {
  const index = SLOWEST.findIndex((path) => file.moduleId.endsWith(`/${path}`))
  return index < 0 ? SLOWEST.length : index
}

export class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>) {
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b))
  }
}

import { Context, Effect, Layer } from "effect"
import { makeAddressThrottle } from "../platform/AddressThrottle.ts"
import { metrics } from "../platform/Observability.ts"
import { EnrollmentConfig } from "./Config.ts"

/**
 * Guessing enrollment links (and document names) is slowed down per source address, as `platform/AddressThrottle`
 * does it: past `ENROLLMENT_LINK_FREE_FAILURES` wrong ones in an hour, each further one blocks the source for
 * twice as long as the one before, up to `ENROLLMENT_LINK_MAX_BLOCK_SECONDS`.
 */
export class LinkThrottle extends Context.Service<LinkThrottle>()("partner-service/enrollment/LinkThrottle", {
  make: Effect.gen(function* () {
    const config = yield* EnrollmentConfig
    return yield* makeAddressThrottle({
      scope: "enrollment_link",
      what: "enrollment links",
      freeFailures: config.linkFreeFailures,
      maxBlockSeconds: config.linkMaxBlockSeconds,
      refused: (reason) => metrics.enrollmentLinksThrottled.inc({ reason }),
    })
  }),
}) {
  static readonly layer = Layer.effect(LinkThrottle, LinkThrottle.make)
}

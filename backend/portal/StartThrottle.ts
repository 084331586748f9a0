import { Context, Effect, Layer } from "effect"
import { makeAddressThrottle } from "../platform/AddressThrottle.ts"
import { metrics } from "../platform/Observability.ts"
import { PortalConfig } from "./Config.ts"

/**
 * Guessing portal links (`/portal/start?code=...`) is slowed down per source address, as the renter's enrollment
 * links are (`platform/AddressThrottle`): a code that opens no session counts against the address; past
 * `PORTAL_START_FREE_FAILURES` in an hour each further one blocks it, doubling up to
 * `PORTAL_START_MAX_BLOCK_SECONDS`.
 */
export class StartThrottle extends Context.Service<StartThrottle>()("partner-service/portal/StartThrottle", {
  make: Effect.gen(function* () {
    const config = yield* PortalConfig
    return yield* makeAddressThrottle({
      scope: "portal_start",
      what: "portal links",
      freeFailures: config.startFreeFailures,
      maxBlockSeconds: config.startMaxBlockSeconds,
      refused: (reason) => metrics.portalStartsThrottled.inc({ reason }),
    })
  }),
}) {
  static readonly layer = Layer.effect(StartThrottle, StartThrottle.make)
}

import { Context, Effect, Layer } from "effect"
import { integer, setting, url } from "../platform/Settings.ts"

/** The partner portal's settings (`docs/settings.md`: `PORTAL_*`). */
export interface PortalConfigShape {
  /** The portal gateway's port; 0 picks a free one. */
  readonly port: number
  /** Where the partner's developers open the portal: the one-time links start with it. */
  readonly baseUrl: string
  /** Minutes a session lasts without a request before it ends (its expiry ends it sooner). */
  readonly idleMinutes: number
  /** Wrong one-time codes an address may open in an hour before each further one blocks it. */
  readonly startFreeFailures: number
  /** The longest an address is blocked after a wrong code; blocks double from one second up to it. */
  readonly startMaxBlockSeconds: number
}

export const loadPortalConfig = Effect.gen(function* () {
  const port = yield* setting(
    "PORTAL_PORT",
    "a port number from 0 to 65535 (0 picks a free port)",
    integer(0, 65535),
    () => 8084,
  )
  return {
    port,
    baseUrl: yield* setting(
      "PORTAL_BASE_URL",
      "an http(s) URL",
      url(["http:", "https:"]),
      () => `http://127.0.0.1:${port === 0 ? 80 : port}`,
    ),
    idleMinutes: yield* setting(
      "PORTAL_IDLE_MINUTES",
      "a whole number of minutes from 1 to 1440",
      integer(1, 1440),
      () => 30,
    ),
    startFreeFailures: yield* setting(
      "PORTAL_START_FREE_FAILURES",
      "a whole number from 1 to 10000",
      integer(1, 10_000),
      () => 20,
    ),
    startMaxBlockSeconds: yield* setting(
      "PORTAL_START_MAX_BLOCK_SECONDS",
      // A block never outlasts the hour after which an address's failures are forgotten.
      "a whole number of seconds from 1 to 3600",
      integer(1, 3600),
      () => 600,
    ),
  } satisfies PortalConfigShape
})

export class PortalConfig extends Context.Service<PortalConfig, PortalConfigShape>()(
  "partner-service/portal/PortalConfig",
) {
  /** Read from the settings `AppConfig` was read from, when it is built. */
  static readonly layer = Layer.effect(PortalConfig, loadPortalConfig)
}

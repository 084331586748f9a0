import { Context, Effect, Layer } from "effect"
import { integer, setting, url } from "../platform/Settings.ts"

/** The partner portal's settings (`docs/settings.md`: `PORTAL_*`). */
export interface PortalConfigShape {
  /** The portal gateway's port; 0 picks a free one. */
  readonly port: number
  /** Where the partner's developers open the portal: the one-time links start with it. */
  readonly baseUrl: string
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
  } satisfies PortalConfigShape
})

export class PortalConfig extends Context.Service<PortalConfig, PortalConfigShape>()(
  "partner-service/portal/PortalConfig",
) {
  /** Read from the settings `AppConfig` was read from, when it is built. */
  static readonly layer = Layer.effect(PortalConfig, loadPortalConfig)
}

import { Context, Effect, Layer, Option } from "effect"
import { AppConfig, type ServiceEnv } from "../platform/Config.ts"
import { boolean, decimal, integer, setting } from "../platform/Settings.ts"

/** The webhook engine's settings (README: `WEBHOOK_*`). */
export interface WebhookConfigShape {
  readonly backoffUnitMs: number
  readonly timeoutMs: number
  readonly maxAttempts: number
  readonly rateLimitPerMinute: number
  /** Attempts one workers process has in flight at once to one endpoint; more wait in Postgres (deferred). */
  readonly maxInFlightPerEndpoint: number
  readonly extraCaFile: Option.Option<string>
  readonly allowPrivateDestinations: boolean
  /** Days a finished delivery (with its attempts) and a finished bulk retry are kept after creation. */
  readonly deliveryRetentionDays: number
}

export const loadWebhookConfig = (serviceEnv: ServiceEnv) =>
  Effect.gen(function* () {
    return {
      backoffUnitMs: yield* setting(
        "WEBHOOK_BACKOFF_UNIT_MS",
        "a number of milliseconds from 0.01 to 3600000 (fractions allow a fast test schedule)",
        decimal(0.01, 3_600_000),
        () => 1000,
      ),
      timeoutMs: yield* setting(
        "WEBHOOK_TIMEOUT_MS",
        "a whole number of milliseconds from 100 to 120000",
        integer(100, 120_000),
        () => 10_000,
      ),
      maxAttempts: yield* setting(
        "WEBHOOK_MAX_ATTEMPTS",
        "a whole number from 1 to 100",
        integer(1, 100),
        () => 25,
      ),
      rateLimitPerMinute: yield* setting(
        "WEBHOOK_RATE_LIMIT_PER_MINUTE",
        "a whole number from 1 to 1000000",
        integer(1, 1_000_000),
        () => 1000,
      ),
      maxInFlightPerEndpoint: yield* setting(
        "WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT",
        "a whole number from 1 to 512",
        integer(1, 512),
        () => 16,
      ),
      extraCaFile: Option.fromUndefinedOr(
        yield* setting(
          "WEBHOOK_EXTRA_CA_FILE",
          "a path to a PEM file",
          (v) => v,
          () => undefined,
        ),
      ),
      allowPrivateDestinations: yield* setting(
        "WEBHOOK_ALLOW_PRIVATE_DESTINATIONS",
        "true or false",
        boolean,
        () => serviceEnv !== "production",
      ),
      deliveryRetentionDays: yield* setting(
        "WEBHOOK_DELIVERY_RETENTION_DAYS",
        "a whole number of days from 1 to 3650",
        integer(1, 3650),
        () => 30,
      ),
    } satisfies WebhookConfigShape
  })

export class WebhookConfig extends Context.Service<WebhookConfig, WebhookConfigShape>()(
  "partner-service/webhooks/WebhookConfig",
) {
  /** Read from the settings `AppConfig` was read from, when it is built. */
  static readonly layer = Layer.effect(
    WebhookConfig,
    Effect.flatMap(Effect.service(AppConfig), (config) => loadWebhookConfig(config.serviceEnv)),
  )
}

import { Context, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig, type ServiceEnv } from "../platform/Config.ts"
import { ConfigInvalid, integer, oneOf, setting, url } from "../platform/Settings.ts"
import { hasControlCharacter } from "../platform/Text.ts"

/**
 * Who charges renters' cards: the built-in test provider (development, staging) or Stripe (any environment; in
 * staging only in test mode, since staging creates no real charges).
 */
export const PaymentProviders = ["test", "stripe"] as const
export type PaymentProviderName = (typeof PaymentProviders)[number]

/** How renters pay (README: `PAYMENT_PROVIDER`, `STRIPE_*`). */
export interface PaymentsConfigShape {
  readonly provider: PaymentProviderName
  /** Stripe's secret API key (`sk_live_...` / `sk_test_...`, only `sk_test_...` in staging); required with Stripe. */
  readonly stripeSecretKey: Option.Option<Redacted.Redacted<string>>
  /** Stripe's API base URL (a test double's in tests). */
  readonly stripeApiUrl: string
}

/** A key of Stripe's test mode, whose charges move no money. */
const isTestModeKey = (key: Redacted.Redacted<string>) => Redacted.value(key).startsWith("sk_test_")

export const loadPaymentsConfig = (serviceEnv: ServiceEnv) =>
  Effect.gen(function* () {
    const provider = yield* setting(
      "PAYMENT_PROVIDER",
      serviceEnv === "production"
        ? "stripe in production (the test provider charges no real card)"
        : serviceEnv === "staging"
          ? "test, or stripe with a test-mode key (sk_test_...), in staging (it creates no real charges)"
          : `one of ${PaymentProviders.join(", ")}`,
      (v) => (serviceEnv === "production" ? oneOf(["stripe"] as const)(v) : oneOf(PaymentProviders)(v)),
      () => (serviceEnv === "production" ? undefined : ("test" as const)),
    )
    if (provider === undefined) {
      return yield* new ConfigInvalid({
        variable: "PAYMENT_PROVIDER",
        expected:
          "set in production to a real payment provider (stripe, with STRIPE_SECRET_KEY): the built-in test " +
          "provider charges no real card",
      })
    }
    const stripeSecretKey = Option.fromUndefinedOr(
      yield* setting(
        "STRIPE_SECRET_KEY",
        "a Stripe secret key (sk_live_... or sk_test_...)",
        (v) => (/^sk_(live|test)_[A-Za-z0-9]+$/.test(v) ? Redacted.make(v) : undefined),
        () => undefined,
        { sensitive: true },
      ),
    )
    if (provider === "stripe" && Option.isNone(stripeSecretKey)) {
      return yield* new ConfigInvalid({
        variable: "STRIPE_SECRET_KEY",
        expected:
          serviceEnv === "staging"
            ? "set when PAYMENT_PROVIDER is stripe: a Stripe test-mode key (sk_test_...) in staging"
            : "set when PAYMENT_PROVIDER is stripe: a Stripe secret key (sk_live_... or sk_test_...)",
      })
    }
    // Staging creates no real charges: a live key is refused even beside the test provider, which never uses it.
    if (serviceEnv === "staging" && Option.exists(stripeSecretKey, (key) => !isTestModeKey(key))) {
      return yield* new ConfigInvalid({
        variable: "STRIPE_SECRET_KEY",
        expected:
          "a Stripe test-mode key (sk_test_...) in staging, which creates no real charges (a live key was given)",
      })
    }
    return {
      provider,
      stripeSecretKey,
      stripeApiUrl: yield* setting(
        "STRIPE_API_URL",
        "an http(s) URL",
        url(["http:", "https:"]),
        () => "https://api.stripe.com",
      ),
    } satisfies PaymentsConfigShape
  })

export class PaymentsConfig extends Context.Service<PaymentsConfig, PaymentsConfigShape>()(
  "partner-service/policies/PaymentsConfig",
) {
  /** Read from the settings `AppConfig` was read from, when it is built. */
  static readonly layer = Layer.effect(
    PaymentsConfig,
    Effect.flatMap(Effect.service(AppConfig), (config) => loadPaymentsConfig(config.serviceEnv)),
  )
}

/**
 * Who stands behind what the renter buys, as the renter's pages and policy documents name them (docs/settings.md:
 * `INSURER_NAME`, `INSURER_ADDRESS`, `INSURER_LICENSE_NUMBER`, `DEPOSIT_HOLDER_NAME`, `SUPPORT_EMAIL`,
 * `SUPPORT_PHONE`). Production must name them; elsewhere an example stands in.
 */
export interface IssuerConfigShape {
  /** The insurer that issues deposit insurance and the renter guarantee. */
  readonly insurerName: string
  /** The insurer's postal address, on one line, as the policy documents give it. */
  readonly insurerAddress: string
  /** The insurer's licence number, as the policy documents give it. */
  readonly insurerLicenseNumber: string
  /** Who holds a renter's refundable cash deposit until the lease ends (the operator's legal name). */
  readonly depositHolderName: string
  /** Where renters write with questions about their enrollment or policy. */
  readonly supportEmail: string
  /** A phone number renters may call, as it is dialled and shown; absent when there is none. */
  readonly supportPhone: string | undefined
}

const EXAMPLE_ISSUER = {
  insurerName: "Example Insurance Company",
  insurerAddress: "100 Example Street, Springfield, IL 62701",
  insurerLicenseNumber: "EX-0000000",
  depositHolderName: "Example Deposit Services, LLC",
  supportEmail: "support@example.com",
}

const plainText = (max: number) => (value: string) =>
  value.length <= max && !hasControlCharacter(value) ? value : undefined

export const loadIssuerConfig = (serviceEnv: ServiceEnv) =>
  Effect.gen(function* () {
    const example = (value: string) => () => (serviceEnv === "production" ? undefined : value)
    const insurerName = yield* setting(
      "INSURER_NAME",
      "the insurer's name, at most 200 characters",
      plainText(200),
      example(EXAMPLE_ISSUER.insurerName),
    )
    const supportEmail = yield* setting(
      "SUPPORT_EMAIL",
      "an email address",
      (v) => (/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/.test(v) && v.length <= 254 ? v : undefined),
      example(EXAMPLE_ISSUER.supportEmail),
    )
    const insurerAddress = yield* setting(
      "INSURER_ADDRESS",
      "the insurer's postal address on one line, at most 300 characters",
      plainText(300),
      example(EXAMPLE_ISSUER.insurerAddress),
    )
    const insurerLicenseNumber = yield* setting(
      "INSURER_LICENSE_NUMBER",
      "the insurer's licence number, at most 100 characters",
      plainText(100),
      example(EXAMPLE_ISSUER.insurerLicenseNumber),
    )
    const depositHolderName = yield* setting(
      "DEPOSIT_HOLDER_NAME",
      "the legal name of who holds renters' cash deposits, at most 200 characters",
      plainText(200),
      example(EXAMPLE_ISSUER.depositHolderName),
    )
    const required = [
      ["INSURER_NAME", insurerName],
      ["SUPPORT_EMAIL", supportEmail],
      ["INSURER_ADDRESS", insurerAddress],
      ["INSURER_LICENSE_NUMBER", insurerLicenseNumber],
      ["DEPOSIT_HOLDER_NAME", depositHolderName],
    ] as const
    const missing = required.find(([, value]) => value === undefined)?.[0]
    if (
      missing !== undefined ||
      insurerName === undefined ||
      supportEmail === undefined ||
      insurerAddress === undefined ||
      insurerLicenseNumber === undefined ||
      depositHolderName === undefined
    ) {
      return yield* new ConfigInvalid({
        variable: missing ?? "INSURER_NAME",
        expected:
          "set in production: the renter's pages and policy documents name the insurer (its address and " +
          "licence), who holds cash deposits and a contact",
      })
    }
    return {
      insurerName,
      insurerAddress,
      insurerLicenseNumber,
      depositHolderName,
      supportEmail,
      supportPhone: yield* setting(
        "SUPPORT_PHONE",
        "a phone number of digits, spaces, +, ( ) and -",
        (v) => (/^\+?[\d\s()-]{7,30}$/.test(v) ? v : undefined),
        () => undefined,
      ),
    } satisfies IssuerConfigShape
  })

export class IssuerConfig extends Context.Service<IssuerConfig, IssuerConfigShape>()(
  "partner-service/policies/IssuerConfig",
) {
  /** Read from the settings `AppConfig` was read from, when it is built. */
  static readonly layer = Layer.effect(
    IssuerConfig,
    Effect.flatMap(Effect.service(AppConfig), (config) => loadIssuerConfig(config.serviceEnv)),
  )
}

/** Staging's scheduled reset (README: `STAGING_RESET_DAYS`); read everywhere, used only with `SERVICE_ENV=staging`. */
export interface StagingConfigShape {
  /** Days after its last change a renter is reset: its prospect removed, its policies canceled. */
  readonly resetDays: number
}

export const loadStagingConfig = Effect.map(
  setting("STAGING_RESET_DAYS", "a whole number of days from 1 to 3650", integer(1, 3650), () => 30),
  (resetDays): StagingConfigShape => ({ resetDays }),
)

export class StagingConfig extends Context.Service<StagingConfig, StagingConfigShape>()(
  "partner-service/policies/StagingConfig",
) {
  /** Read from the settings `AppConfig` was read from (its layer brings their provider). */
  static readonly layer = Layer.effect(StagingConfig, loadStagingConfig)
}

/** The object store bucket of policy archives (`<PREFIX>_POLICY_DOCUMENTS`); nothing in it is ever deleted. */
export const DOCUMENTS_BUCKET = "POLICY_DOCUMENTS"

/**
 * The object store buckets of policies, each with its byte limit unless `NATS_MAX_BYTES_<BUCKET>` sets another
 * (JetStream reserves it out of the server's storage, as for a stream).
 */
export const DocumentBuckets = { [DOCUMENTS_BUCKET]: { maxBytes: 4 * 1024 * 1024 * 1024 } } as const

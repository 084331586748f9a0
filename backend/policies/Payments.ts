import { randomBytes } from "node:crypto"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import type Stripe from "stripe"
import { PaymentsConfig } from "./Config.ts"

/**
 * Renters' cards go to a payment provider, which keeps them: the service stores only the provider's reference and
 * the last four digits, and never logs a card number. A card is saved once (when the renter pays) and charged by
 * reference: with the renter present at enrollment, without them for each later monthly premium.
 */

/** A card as the renter typed it, already checked for form (digits, Luhn, a future expiry). */
export interface Card {
  readonly number: string
  readonly expMonth: number
  readonly expYear: number
  readonly cvc: string
  readonly name: string
  readonly postalCode?: string | undefined
}

export interface SavedCard {
  /** The provider's reference; never the number. */
  readonly reference: string
  readonly last4: string
  readonly brand: string
}

export type CardOutcome =
  { readonly saved: true; readonly card: SavedCard } | { readonly saved: false; readonly reason: string }

export interface ChargeRequest {
  readonly card: string
  readonly amountCents: number
  /** The same key asks for the same charge: a retry after a lost answer never charges twice. */
  readonly idempotencyKey: string
  readonly description: string
  /** `enrollment`: the renter is paying now; `recurring`: a later monthly premium, without them. */
  readonly occasion: "enrollment" | "recurring"
  /** Which premium a recurring charge asks for (2 is the first after enrollment's), for the provider's records. */
  readonly installment?: number
}

export type ChargeOutcome =
  | { readonly charged: true; readonly reference: string }
  | { readonly charged: false; readonly reason: string }

export interface PaymentProviderShape {
  /** `test` or `stripe`; stored with each card so a charge goes to the provider that holds it. */
  readonly name: string
  readonly saveCard: (card: Card) => Effect.Effect<CardOutcome>
  readonly charge: (request: ChargeRequest) => Effect.Effect<ChargeOutcome>
}

export class PaymentProvider extends Context.Service<PaymentProvider, PaymentProviderShape>()(
  "partner-service/policies/PaymentProvider",
) {
  /** The provider `PAYMENT_PROVIDER` names (production refuses to start with the test provider). */
  static readonly layer = Layer.effect(
    PaymentProvider,
    Effect.gen(function* () {
      const config = yield* PaymentsConfig
      return config.provider === "stripe"
        ? yield* stripeProvider(
            Redacted.value(Option.getOrThrow(config.stripeSecretKey)),
            config.stripeApiUrl,
          )
        : testProvider
    }),
  ).pipe(Layer.provide(PaymentsConfig.layer))
}

/** What a test card does: its first charge and every later one. */
type TestBehaviour = "ok" | "decline" | "fails_next_charge"

/**
 * The documented test cards of the built-in provider (development and staging): any future expiry, any CVC.
 * `--card ok|decline|fails-next-charge` of the CLI helper picks one.
 */
export const TEST_CARDS = {
  ok: "4242424242424242",
  decline: "4000000000000002",
  "fails-next-charge": "4000000000000341",
} as const

const BEHAVIOUR_OF: Readonly<Record<string, TestBehaviour>> = {
  [TEST_CARDS.ok]: "ok",
  [TEST_CARDS.decline]: "decline",
  [TEST_CARDS["fails-next-charge"]]: "fails_next_charge",
}

const DECLINED = "Your card was declined."

/**
 * The built-in test provider: it charges nothing real. It accepts only its test cards (so a real card typed on
 * staging goes nowhere), remembers a card's behaviour in its reference, and answers as the card says: `ok` always
 * succeeds, `decline` is declined, `fails_next_charge` succeeds while the renter pays, is declined on the next
 * (monthly) charge, the second premium (a recurring charge naming no installment counts as that one), and
 * succeeds again after it, so a missed premium and its later payment can both be seen.
 */
export const testProvider: PaymentProviderShape = {
  name: "test",
  saveCard: (card) =>
    Effect.sync(() => {
      const behaviour = BEHAVIOUR_OF[card.number]
      if (behaviour === undefined) {
        return {
          saved: false,
          reason:
            "Use one of the test cards: 4242 4242 4242 4242, 4000 0000 0000 0002 or 4000 0000 0000 0341.",
        } as const
      }
      return {
        saved: true,
        card: {
          reference: `tpm_${behaviour}_${randomBytes(12).toString("hex")}`,
          last4: card.number.slice(-4),
          brand: "visa",
        },
      } as const
    }),
  charge: (request) =>
    Effect.sync(() => {
      const behaviour = /^tpm_(ok|decline|fails_next_charge)_/.exec(request.card)?.[1] as
        TestBehaviour | undefined
      const declined =
        behaviour === undefined ||
        behaviour === "decline" ||
        (behaviour === "fails_next_charge" &&
          request.occasion === "recurring" &&
          (request.installment ?? 2) <= 2)
      return declined
        ? ({ charged: false, reason: DECLINED } as const)
        : ({ charged: true, reference: `tch_${randomBytes(12).toString("hex")}` } as const)
    }),
}

/** A decline or an invalid card, which the renter can fix with another card; anything else is a defect. */
const isCardError = (error: unknown): error is { readonly message: string } =>
  typeof error === "object" &&
  error !== null &&
  "type" in error &&
  (error.type === "StripeCardError" || error.type === "card_error")

/**
 * Stripe, the real provider: a card becomes a PaymentMethod attached to a Customer of its own (reference
 * `<customer>/<payment method>`), so later monthly premiums can be charged off-session; each charge is a
 * PaymentIntent confirmed at once, with the request's idempotency key. Card numbers reach Stripe from the server
 * (the renter's pages load nothing from elsewhere), which needs Stripe's raw card data access and puts the
 * service in PCI DSS scope (SAQ D): recorded in docs/decisions.md.
 */
export const stripeProvider = (secretKey: string, apiUrl: string) =>
  // Stripe's SDK is loaded only where it is the provider: most processes and every CLI command never need it.
  Effect.map(
    Effect.promise(() => import("stripe")),
    ({ default: StripeSdk }): PaymentProviderShape =>
      stripeWith(new StripeSdk(secretKey, stripeOptions(apiUrl))),
  )

const stripeOptions = (apiUrl: string) => {
  const api = new URL(apiUrl)
  return {
    host: api.hostname,
    port: api.port === "" ? (api.protocol === "https:" ? 443 : 80) : Number(api.port),
    protocol: api.protocol === "http:" ? ("http" as const) : ("https" as const),
    maxNetworkRetries: 2,
    timeout: 20_000,
    telemetry: false,
  } as const
}

const stripeWith = (stripe: Stripe): PaymentProviderShape => ({
  name: "stripe",
  saveCard: (card) =>
    Effect.tryPromise({
      try: async () => {
        const method = await stripe.paymentMethods.create({
          type: "card",
          card: { number: card.number, exp_month: card.expMonth, exp_year: card.expYear, cvc: card.cvc },
          billing_details: {
            name: card.name,
            ...(card.postalCode === undefined ? {} : { address: { postal_code: card.postalCode } }),
          },
        })
        const customer = await stripe.customers.create({ name: card.name, payment_method: method.id })
        return {
          saved: true,
          card: {
            reference: `${customer.id}/${method.id}`,
            last4: method.card?.last4 ?? card.number.slice(-4),
            brand: method.card?.brand ?? "card",
          },
        } as const
      },
      catch: (error) => error,
    }).pipe(
      Effect.catch((error) =>
        isCardError(error)
          ? Effect.succeed({ saved: false, reason: error.message } as const)
          : Effect.die(new Error(`Stripe refused to save a card: ${String((error as Error).message)}`)),
      ),
    ),
  charge: (request) =>
    Effect.tryPromise({
      try: async () => {
        const [customer, method] = request.card.split("/") as [string, string]
        const intent = await stripe.paymentIntents.create(
          {
            amount: request.amountCents,
            currency: "usd",
            customer,
            payment_method: method,
            automatic_payment_methods: { enabled: true, allow_redirects: "never" },
            confirm: true,
            off_session: request.occasion === "recurring",
            description: request.description,
            ...(request.installment === undefined
              ? {}
              : { metadata: { installment: String(request.installment) } }),
          },
          { idempotencyKey: request.idempotencyKey },
        )
        return intent.status === "succeeded"
          ? ({ charged: true, reference: intent.id } as const)
          : ({ charged: false, reason: "The card needs the renter's authentication." } as const)
      },
      catch: (error) => error,
    }).pipe(
      Effect.catch((error) =>
        isCardError(error)
          ? Effect.succeed({ charged: false, reason: error.message } as const)
          : Effect.die(new Error(`Stripe refused a charge: ${String((error as Error).message)}`)),
      ),
    ),
})

import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { PaymentsConfig } from "../../backend/policies/Config.ts"
import { stripeProvider, TEST_CARDS, testProvider } from "../../backend/policies/Payments.ts"
import { databaseUrl } from "../../backend/platform/DatabaseUrl.ts"
import { spawnProcess } from "../support/ChildProcess.ts"
import { runCli } from "../support/Cli.ts"
import { baseDatabaseUrl, isolatedEnv, PRODUCTION } from "../support/TestPlatform.ts"
import { adminConnection } from "../support/TemplateDatabase.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

const card = (number: string) => ({ number, expMonth: 12, expYear: 2039, cvc: "123", name: "John Doe" })
const charge = (reference: string, occasion: "enrollment" | "recurring") => ({
  card: reference,
  amountCents: 1_000,
  idempotencyKey: `key-${occasion}`,
  description: "premium",
  occasion,
})

interface Seen {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly form: URLSearchParams
}

/** A stand-in for Stripe's API on loopback: records each request and answers as Stripe does. */
const fakeStripe = Effect.acquireRelease(
  Effect.promise(async () => {
    const seen: Array<Seen> = []
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"))
        seen.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, form })
        const reply = (status: number, body: unknown) => {
          res.writeHead(status, { "content-type": "application/json", "request-id": "req_1" })
          res.end(JSON.stringify(body))
        }
        if (req.url === "/v1/payment_methods") {
          return reply(200, {
            id: "pm_1",
            object: "payment_method",
            card: { last4: form.get("card[number]")!.slice(-4), brand: "visa" },
          })
        }
        if (req.url === "/v1/customers") return reply(200, { id: "cus_1", object: "customer" })
        if (req.url === "/v1/payment_intents") {
          return form.get("off_session") === "true"
            ? reply(402, {
                error: { type: "card_error", code: "card_declined", message: "Your card was declined." },
              })
            : reply(200, { id: "pi_1", object: "payment_intent", status: "succeeded" })
        }
        reply(404, { error: { type: "invalid_request_error", message: "Unrecognized request URL" } })
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return { server, seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve()))),
)

/** Whether the server holds the database a URL names. */
const databaseExists = (url: string) =>
  Effect.promise(async () => {
    const sql = adminConnection(baseDatabaseUrl)
    const rows = await sql`select 1 from pg_database where datname = ${databaseUrl(url).database}`
    await sql.end()
    return rows.length > 0
  })

/** The provider the settings in `env` name, or why they are refused. */
const load = (env: Record<string, string>) =>
  PaymentsConfig.use((config) => Effect.succeed(config.provider)).pipe(
    Effect.provide(PaymentsConfig.layer.pipe(Layer.provide(AppConfig.layerFrom(env)))),
    Effect.exit,
  )

const refused = (exit: Exit.Exit<unknown, unknown>, variable: string, expected?: string) => {
  assert.isTrue(Exit.isFailure(exit))
  const cause = String(Exit.isFailure(exit) ? exit.cause : "")
  assert.include(cause, variable)
  if (expected !== undefined) assert.include(cause, expected)
}

describe("payment providers", () => {
  it.effect("the test provider answers as each documented test card says", () =>
    Effect.gen(function* () {
      const saved = async (number: string) => {
        const outcome = await Effect.runPromise(testProvider.saveCard(card(number)))
        if (!outcome.saved) throw new Error(outcome.reason)
        return outcome.card
      }
      const ok = yield* Effect.promise(() => saved(TEST_CARDS.ok))
      const decline = yield* Effect.promise(() => saved(TEST_CARDS.decline))
      const failsNext = yield* Effect.promise(() => saved(TEST_CARDS["fails-next-charge"]))
      assert.deepStrictEqual([ok.last4, decline.last4, failsNext.last4], ["4242", "0002", "0341"])
      for (const saved of [ok, decline, failsNext]) assert.notInclude(saved.reference, "4000")

      const charged = (reference: string, occasion: "enrollment" | "recurring") =>
        Effect.map(testProvider.charge(charge(reference, occasion)), (outcome) => outcome.charged)
      assert.isTrue(yield* charged(ok.reference, "enrollment"))
      assert.isTrue(yield* charged(ok.reference, "recurring"))
      assert.isFalse(yield* charged(decline.reference, "enrollment"))
      assert.isTrue(yield* charged(failsNext.reference, "enrollment"))
      assert.isFalse(yield* charged(failsNext.reference, "recurring"))

      const real = yield* testProvider.saveCard(card("4111111111111111"))
      assert.isFalse(real.saved)
    }),
  )

  it.effect("the Stripe provider saves a card on a customer and charges it by reference, once per key", () =>
    Effect.gen(function* () {
      const stripe = yield* fakeStripe
      const provider = yield* stripeProvider("sk_test_fake", stripe.url)
      const saved = yield* provider.saveCard({ ...card("4242424242424242"), postalCode: "62701" })
      assert.deepStrictEqual(saved, {
        saved: true,
        card: { reference: "cus_1/pm_1", last4: "4242", brand: "visa" },
      })
      const paid = yield* provider.charge(charge("cus_1/pm_1", "enrollment"))
      assert.deepStrictEqual(paid, { charged: true, reference: "pi_1" })
      const monthly = yield* provider.charge(charge("cus_1/pm_1", "recurring"))
      assert.deepStrictEqual(monthly, { charged: false, reason: "Your card was declined." })

      const [method, customer, intent, offSession] = stripe.seen
      assert.strictEqual(method!.path, "/v1/payment_methods")
      assert.strictEqual(method!.headers.authorization, "Bearer sk_test_fake")
      assert.strictEqual(method!.form.get("card[number]"), "4242424242424242")
      assert.strictEqual(method!.form.get("billing_details[address][postal_code]"), "62701")
      assert.strictEqual(customer!.path, "/v1/customers")
      assert.strictEqual(customer!.form.get("payment_method"), "pm_1")
      assert.strictEqual(intent!.path, "/v1/payment_intents")
      assert.strictEqual(intent!.headers["idempotency-key"], "key-enrollment")
      assert.deepStrictEqual(
        [intent!.form.get("amount"), intent!.form.get("currency"), intent!.form.get("customer")],
        ["1000", "usd", "cus_1"],
      )
      assert.strictEqual(intent!.form.get("payment_method"), "pm_1")
      assert.strictEqual(intent!.form.get("confirm"), "true")
      assert.strictEqual(offSession!.form.get("off_session"), "true")
      assert.strictEqual(offSession!.headers["idempotency-key"], "key-recurring")
    }).pipe(Effect.scoped),
  )

  it.effect("production starts only with a real provider configured", () =>
    Effect.gen(function* () {
      const production = { SERVICE_ENV: "production", MASTER_KEY: Buffer.alloc(32, 7).toString("base64") }
      refused(yield* load(production), "PAYMENT_PROVIDER")
      refused(yield* load({ ...production, PAYMENT_PROVIDER: "test" }), "PAYMENT_PROVIDER")
      refused(yield* load({ ...production, PAYMENT_PROVIDER: "stripe" }), "STRIPE_SECRET_KEY")
      const stripe = yield* load({
        ...production,
        PAYMENT_PROVIDER: "stripe",
        STRIPE_SECRET_KEY: "sk_live_abc123",
      })
      assert.deepStrictEqual(stripe, Exit.succeed("stripe"))
      assert.deepStrictEqual(
        yield* load({ SERVICE_ENV: "staging", MASTER_KEY: production.MASTER_KEY }),
        Exit.succeed("test"),
      )
      assert.deepStrictEqual(yield* load({}), Exit.succeed("test"))
    }),
  )

  it.effect("staging starts only with the test provider or a Stripe test-mode key", () =>
    Effect.gen(function* () {
      const staging = { SERVICE_ENV: "staging", MASTER_KEY: Buffer.alloc(32, 7).toString("base64") }
      const live = "sk_live_abc123"
      assert.deepStrictEqual(yield* load(staging), Exit.succeed("test"))
      assert.deepStrictEqual(yield* load({ ...staging, PAYMENT_PROVIDER: "test" }), Exit.succeed("test"))
      assert.deepStrictEqual(
        yield* load({ ...staging, PAYMENT_PROVIDER: "stripe", STRIPE_SECRET_KEY: "sk_test_abc123" }),
        Exit.succeed("stripe"),
      )
      const liveKey = yield* load({ ...staging, PAYMENT_PROVIDER: "stripe", STRIPE_SECRET_KEY: live })
      refused(liveKey, "STRIPE_SECRET_KEY", "a Stripe test-mode key (sk_test_...) in staging")
      assert.notInclude(String(Exit.isFailure(liveKey) ? liveKey.cause : ""), live)
      // A live key is refused even where the test provider would never use it.
      refused(yield* load({ ...staging, STRIPE_SECRET_KEY: live }), "STRIPE_SECRET_KEY", "test-mode")
      refused(
        yield* load({ ...staging, PAYMENT_PROVIDER: "adyen" }),
        "PAYMENT_PROVIDER",
        "test, or stripe with a test-mode key (sk_test_...), in staging",
      )
      refused(yield* load({ ...staging, PAYMENT_PROVIDER: "stripe" }), "STRIPE_SECRET_KEY", "sk_test_")
      // Development keeps taking either kind of key.
      assert.deepStrictEqual(
        yield* load({ PAYMENT_PROVIDER: "stripe", STRIPE_SECRET_KEY: live }),
        Exit.succeed("stripe"),
      )
    }),
  )

  it.live(
    "a live Stripe key stops a staging start-up with a message naming the variable, before anything connects",
    () =>
      Effect.gen(function* () {
        const live = "sk_live_0123456789abcdef"
        const env = isolatedEnv({
          SERVICE_ENV: "staging",
          PAYMENT_PROVIDER: "stripe",
          STRIPE_SECRET_KEY: live,
          LOG_LEVEL: "info",
        })
        const service = yield* spawnProcess(process.execPath, ["backend/main.ts"], { cwd: root, env })
        const exit = yield* service.exited
        assert.strictEqual(exit.code, 1, service.stderr())
        assert.include(
          service.stderr(),
          "Invalid configuration: STRIPE_SECRET_KEY must be a Stripe test-mode key (sk_test_...) in staging",
        )
        assert.notInclude(service.stderr(), live)
        assert.strictEqual(service.stdout(), "", "the service logged as if it had started")
        assert.isFalse(yield* databaseExists(env.DATABASE_URL!), "the service connected to the database")
      }).pipe(Effect.scoped),
    60_000,
  )

  it.live(
    "the CLI helper is refused in production, before it connects to anything",
    () =>
      Effect.gen(function* () {
        const env = isolatedEnv(PRODUCTION)
        const run = yield* runCli(
          env,
          "enrollment",
          "complete",
          "--source",
          "s",
          "--id",
          "p",
          "--product",
          "cash_deposit",
        )
        assert.strictEqual(run.code, 2, run.stderr)
        assert.include(run.stderr, "refused in production")
        assert.strictEqual(run.stdout, "")
        assert.isFalse(yield* databaseExists(env.DATABASE_URL!), "the command connected to the database")
      }),
    60_000,
  )
})

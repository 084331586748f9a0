import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll } from "vitest"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { Journey } from "../../backend/enrollment/Journey.ts"
import { enrollmentService, linkOf } from "../support/Enrollment.ts"
import {
  awaitProspect,
  completeProspect,
  issueSource,
  postProspect,
  prospectPartner,
  provisionedOwner,
} from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

/**
 * A stand-in for Stripe's API on loopback that saves cards at once and holds each charge until the test lets it
 * succeed, so the renter can go away while the provider is charging.
 */
const charging = { asked: 0, release: [] as Array<() => void> }
const stripe = createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    const reply = (body: unknown) => {
      res.writeHead(200, { "content-type": "application/json", "request-id": "req_1" })
      res.end(JSON.stringify(body))
    }
    if (req.url === "/v1/payment_methods") {
      return reply({ id: "pm_1", object: "payment_method", card: { last4: "4242", brand: "visa" } })
    }
    if (req.url === "/v1/customers") return reply({ id: "cus_1", object: "customer" })
    charging.asked += 1
    charging.release.push(() => reply({ id: "pi_1", object: "payment_intent", status: "succeeded" }))
  })
})
await new Promise<void>((resolve) => stripe.listen(0, "127.0.0.1", resolve))
afterAll(() => new Promise<void>((resolve) => stripe.close(() => resolve())))

const service = enrollmentService({
  PAYMENT_PROVIDER: "stripe",
  STRIPE_SECRET_KEY: "sk_test_abandonedPayment",
  STRIPE_API_URL: `http://127.0.0.1:${(stripe.address() as AddressInfo).port}`,
})

const SOURCE = "abandoned"

layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
  describe("a renter who goes away while paying", () => {
    it.effect("still has the charge recorded and the policy issued once the provider has charged", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const partner = yield* prospectPartner()
        yield* issueSource({ code: SOURCE, clients: [partner.clientId] })
        const slug = yield* provisionedOwner(partner, "abandoned-org")
        yield* postProspect(
          partner,
          slug,
          completeProspect(SOURCE, "gone-1", { email: "gone-1@example.com" }),
        )
        const link = linkOf((yield* awaitProspect(partner, slug, SOURCE, "gone-1")).enrollment_url as string)
        yield* journey.confirmDetails(link, {})
        yield* journey.supplyUnderwritingInputs(link, {
          yearlyIncome: "95,000",
          employmentStatus: "employed",
          hasSsn: "yes",
          termsAccepted: true,
        })
        assert.strictEqual((yield* journey.choose(link, { product: "cash_deposit" })).step, "quote")

        // The gateway interrupts the request of a renter whose browser has gone; here, while the card is charged.
        const paying = yield* Effect.forkDetach(
          journey.pay(link, {
            cardNumber: "4242 4242 4242 4242",
            expiry: "12/39",
            cvc: "123",
            nameOnCard: "John Doe",
          }),
        )
        yield* eventually(
          Effect.sync(() => charging.asked),
          (asked) => asked === 1,
        )
        yield* Effect.forkDetach(Fiber.interrupt(paying))
        charging.release.shift()!()
        yield* Fiber.await(paying)

        const charges = yield* query(
          (sql) => sql<Array<{ status: string; provider_reference: string }>>`
            select c.status, c.provider_reference from charges c
            join policy_applications a on a.id = c.application_id
            where a.source_prospect_id = 'gone-1'`,
        )
        assert.deepStrictEqual(charges, [{ status: "succeeded", provider_reference: "pi_1" }])
        const back = yield* journey.open(link)
        assert.strictEqual(back.step, "completed")
        assert.isDefined(back.policy)
      }),
    )
  })
})

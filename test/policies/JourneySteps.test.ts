import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { JourneyLink, JourneyView, LinkInvalid } from "../../backend/enrollment/Domain.ts"
import { Journey } from "../../backend/enrollment/Journey.ts"
import { TEST_CARDS } from "../../backend/policies/Payments.ts"
import { billingAnchor, coverageMonths } from "../../backend/policies/Pricing.ts"
import { enrollmentService, linkOf } from "../support/Enrollment.ts"
import { captureLogs } from "../support/Logs.ts"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  issueSource,
  LEASE,
  postProspect,
  prospectPartner,
  provisionedOwner,
  PROPERTY,
} from "../support/Prospects.ts"
import { postBatch, query, type RosterPartner } from "../support/Roster.ts"

const { lines, layer: captured } = captureLogs("All")
const service = enrollmentService({}, captured)

const SOURCE = "steps"
const CARD = { expiry: "12/39", cvc: "123", nameOnCard: "John Doe" }
const ANSWERS = { yearlyIncome: "95,000", employmentStatus: "employed", hasSsn: "yes", termsAccepted: true }

interface Setup {
  readonly partner: RosterPartner
  readonly slug: string
}

let setup: Setup | undefined
/** One partner, source and owner for the file; each test enrolls prospects of its own. */
const shared = Effect.gen(function* () {
  if (setup !== undefined) return setup
  const partner = yield* prospectPartner()
  yield* issueSource({ code: SOURCE, clients: [partner.clientId] })
  const slug = yield* provisionedOwner(partner, "steps-org")
  setup = { partner, slug }
  return setup
})

/** A ready prospect's link. */
const readyLink = (id: string, overrides: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const { partner, slug } = yield* shared
    yield* postProspect(
      partner,
      slug,
      completeProspect(SOURCE, id, { email: `${id}@example.com`, ...overrides }),
    )
    const ready = yield* awaitProspect(partner, slug, SOURCE, id)
    return linkOf(ready.enrollment_url as string)
  })

/** The journey up to the quote of `product`. */
const toQuote = (link: JourneyLink, product = "security_deposit_insurance", cadence = "upfront") =>
  Effect.gen(function* () {
    const journey = yield* Journey
    yield* journey.confirmDetails(link, {})
    yield* journey.supplyUnderwritingInputs(link, ANSWERS)
    return yield* journey.choose(link, { product, cadence })
  })

const chargesOf = (sourceProspectId: string) =>
  query(
    (sql) => sql<Array<{ status: string; amount_cents: string; kind: string }>>`
      select c.status, c.amount_cents::text, c.kind from charges c
      join policy_applications a on a.id = c.application_id
      where a.source_prospect_id = ${sourceProspectId} order by c.id`,
  )

/** The refusal a step answered with: a success or a crash fails the test; the reason is for logs only. */
const refusal = (view: Effect.Effect<JourneyView, LinkInvalid>) =>
  Effect.map(Effect.flip(view), (error) => ({ tag: error._tag, reason: error.reason }))

layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
  describe("the enrollment journey, step by step", () => {
    it.effect("refuses a link with another email, another owner or an unknown prospect, the same way", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const link = yield* readyLink("links-1")
        assert.strictEqual((yield* journey.open(link)).step, "details")
        assert.strictEqual((yield* journey.open({ ...link, email: "LINKS-1@EXAMPLE.COM" })).step, "details")
        for (const [bad, reason] of [
          [{ ...link, email: "someone-else@example.com" }, "the email does not match the prospect's"],
          [{ ...link, ownerSlug: "another-owner" }, "the prospect belongs to another owner"],
          [{ ...link, sourceProspectId: "never-posted" }, "no such prospect"],
          [{ ...link, source: "never-issued" }, "no such prospect"],
        ] as const) {
          const refused = { tag: "LinkInvalid" as const, reason }
          assert.deepStrictEqual(yield* refusal(journey.open(bad)), refused, JSON.stringify(bad))
          assert.deepStrictEqual(
            yield* refusal(journey.confirmDetails(bad, {})),
            refused,
            JSON.stringify(bad),
          )
        }
      }),
    )

    it.effect("refuses the link of a prospect eligible for nothing before the renter began", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const { partner, slug } = yield* shared
        yield* postProspect(
          partner,
          slug,
          completeProspect(SOURCE, "nothing-1", {
            email: "n@example.com",
            pms_property_id: "unknown-building",
          }),
        )
        yield* awaitProspect(partner, slug, SOURCE, "nothing-1")
        const link: JourneyLink = {
          flow: "embedded",
          ownerSlug: slug,
          source: SOURCE,
          sourceProspectId: "nothing-1",
          email: "n@example.com",
        }
        assert.deepStrictEqual(yield* refusal(journey.open(link)), {
          tag: "LinkInvalid",
          reason: "the prospect is ready and not eligible",
        })
      }),
    )

    it.effect("asks again for what the renter got wrong, on the same step, and changes nothing", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const link = yield* readyLink("fields-1")
        const phone = yield* journey.confirmDetails(link, { phone: "555-12" })
        assert.strictEqual(phone.step, "details")
        assert.deepStrictEqual(Object.keys(phone.error?.kind === "fields" ? phone.error.fields : {}), [
          "phone",
        ])
        const corrected = yield* journey.confirmDetails(link, { phone: "(555) 111-2222" })
        assert.strictEqual(corrected.step, "underwriting")
        assert.strictEqual(corrected.renter.phone, "5551112222")

        const wrong = yield* journey.supplyUnderwritingInputs(link, {
          yearlyIncome: "lots",
          employmentStatus: "astronaut",
          hasSsn: "maybe",
          termsAccepted: false,
        })
        assert.strictEqual(wrong.step, "underwriting")
        assert.deepStrictEqual(Object.keys(wrong.error?.kind === "fields" ? wrong.error.fields : {}).sort(), [
          "employment_status",
          "has_ssn",
          "terms_accepted",
          "yearly_income",
        ])
        assert.isEmpty(wrong.offers)
        const offered = yield* journey.supplyUnderwritingInputs(link, ANSWERS)
        assert.strictEqual(offered.step, "choose")
        assert.deepStrictEqual(
          offered.offers.map((o) => o.product),
          ["security_deposit_insurance", "cash_deposit"],
        )
        const noCadence = yield* journey.choose(link, { product: "security_deposit_insurance" })
        assert.strictEqual(noCadence.step, "choose")
        assert.property(noCadence.error?.kind === "fields" ? noCadence.error.fields : {}, "cadence")
        const notOffered = yield* journey.choose(link, {
          product: "renter_guarantee_insurance",
          cadence: "upfront",
        })
        assert.property(notOffered.error?.kind === "fields" ? notOffered.error.fields : {}, "product")

        const quoted = yield* journey.choose(link, { product: "cash_deposit" })
        assert.strictEqual(quoted.step, "quote")
        const badCard = yield* journey.pay(link, {
          cardNumber: "4242 4242 4242 4241",
          expiry: "01/20",
          cvc: "1",
          nameOnCard: "",
        })
        assert.strictEqual(badCard.step, "quote")
        assert.deepStrictEqual(
          Object.keys(badCard.error?.kind === "fields" ? badCard.error.fields : {}).sort(),
          ["card_number", "cvc", "expiry", "name_on_card"],
        )
        assert.isEmpty(yield* chargesOf("fields-1"))
      }),
    )

    it.effect("keeps a declined card on the quote, then issues the policy with another, charging once", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const link = yield* readyLink("pay-1")
        const quoted = yield* toQuote(link)
        assert.strictEqual(quoted.step, "quote")
        assert.strictEqual(quoted.quote!.premiumCents, 10_000)

        const declined = yield* journey.pay(link, { ...CARD, cardNumber: TEST_CARDS.decline })
        assert.strictEqual(declined.step, "quote")
        assert.strictEqual(declined.error?.kind, "payment_declined")

        const card = { ...CARD, cardNumber: "4242 4242 4242 4242" }
        // A double submit: both wait for the journey's lock; the second finds the policy issued.
        const [first, second] = yield* Effect.all([journey.pay(link, card), journey.pay(link, card)], {
          concurrency: "unbounded",
        })
        assert.strictEqual(first.step, "completed")
        assert.strictEqual(second.step, "completed")
        assert.strictEqual(first.policy!.id, second.policy!.id)
        assert.strictEqual(first.policy!.cardLast4, "4242")
        assert.match(first.policy!.policyNumber, /^SDI-\d{4}-\d{6}$/)
        const again = yield* journey.pay(link, card)
        assert.strictEqual(again.policy!.id, first.policy!.id)
        assert.deepStrictEqual(yield* chargesOf("pay-1"), [
          { status: "declined", amount_cents: "10000", kind: "initial" },
          { status: "succeeded", amount_cents: "10000", kind: "initial" },
        ])
        // Later calls of an earlier step change nothing.
        assert.strictEqual((yield* journey.choose(link, { product: "cash_deposit" })).step, "completed")
        assert.strictEqual((yield* journey.confirmDetails(link, {})).step, "completed")
      }),
    )

    it.effect(
      "never stores or logs a card number: only the provider's reference and the last four digits",
      () =>
        Effect.gen(function* () {
          const journey = yield* Journey
          const link = yield* readyLink("secret-card-1")
          yield* toQuote(link, "security_deposit_insurance", "monthly")
          const done = yield* journey.pay(link, { ...CARD, cardNumber: TEST_CARDS["fails-next-charge"] })
          assert.strictEqual(done.step, "completed")
          const [stored] = yield* query(
            (sql) => sql<Array<{ text: string }>>`
            select (select string_agg(t::text, '|') from payment_methods t) ||
                   (select string_agg(t::text, '|') from charges t) ||
                   (select string_agg(t::text, '|') from policies t) ||
                   (select string_agg(t::text, '|') from enrollments t) ||
                   (select string_agg(convert_from(payload, 'UTF8'), '|') from outbox) as text`,
          )
          for (const number of Object.values(TEST_CARDS)) {
            assert.notInclude(stored!.text, number)
            assert.notInclude(lines.join("\n"), number)
          }
          const [method] = yield* query(
            (sql) => sql<Array<{ last4: string; reference: string }>>`
            select m.last4, m.reference from payment_methods m
            join policies p on p.payment_method_id = m.id
            where p.source_prospect_id = 'secret-card-1'`,
          )
          assert.strictEqual(method!.last4, "0341")
          assert.match(method!.reference, /^tpm_fails_next_charge_[0-9a-f]+$/)
        }),
    )

    it.effect("cancels the quoted application when the renter chooses again", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const link = yield* readyLink("rechoose-1")
        const first = yield* toQuote(link)
        const same = yield* journey.choose(link, {
          product: "security_deposit_insurance",
          cadence: "upfront",
        })
        assert.strictEqual(same.quote!.applicationId, first.quote!.applicationId)
        const second = yield* journey.choose(link, {
          product: "security_deposit_insurance",
          cadence: "monthly",
        })
        assert.notStrictEqual(second.quote!.applicationId, first.quote!.applicationId)
        assert.strictEqual(second.quote!.premiumCents, 1_000)
        // A payment for each month of the lease from the quote's day on.
        const [quoted] = yield* query(
          (sql) => sql<Array<{ on: string }>>`
            select (created_at at time zone 'UTC')::date::text as on from policy_applications
            where source_prospect_id = 'rechoose-1' order by id desc limit 1`,
        )
        assert.strictEqual(
          second.quote!.payments,
          coverageMonths(billingAnchor(LEASE.start, quoted!.on), LEASE.end),
        )
        const statuses = yield* query(
          (sql) => sql<Array<{ status: string; outcome: string }>>`
            select status, outcome from policy_applications where source_prospect_id = 'rechoose-1' order by id`,
        )
        assert.deepStrictEqual(statuses, [
          { status: "canceled", outcome: "quoted" },
          { status: "created", outcome: "quoted" },
        ])
      }),
    )

    it.effect("blocks a renter whose building left the roster mid-way", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const { partner, slug } = yield* shared
        // A building of its own, so the other tests' prospects keep theirs.
        yield* postBatch(partner, slug, "properties", [
          {
            ...PROPERTY,
            external_system_id: "prop-leaving",
            building_name: "Leaving",
            pms_property_id: "pms-leaving",
          },
        ])
        yield* postBatch(partner, slug, "units", [
          { external_system_id: "unit-leaving", property_external_id: "prop-leaving", name: "1A" },
        ])
        const link = yield* readyLink("blocked-1", {
          pms_property_id: "pms-leaving",
          property_external_id: "prop-leaving",
          unit_external_id: "unit-leaving",
        })
        assert.strictEqual((yield* journey.confirmDetails(link, {})).step, "underwriting")
        yield* postBatch(partner, slug, "properties", [
          {
            ...PROPERTY,
            external_system_id: "prop-leaving",
            building_name: "Leaving",
            pms_property_id: "pms-leaving",
            active: false,
          },
        ])
        const blocked = yield* journey.supplyUnderwritingInputs(link, ANSWERS)
        assert.strictEqual(blocked.step, "blocked")
        assert.include(blocked.blockedReason, "Property is not on the owner's roster")
        assert.strictEqual((yield* journey.open(link)).step, "blocked")
      }),
    )

    it.effect("offers only the products the renter's own answers pass, each of which can be bought", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const { partner, slug } = yield* shared
        const link = yield* readyLink("low-income-1")
        yield* journey.confirmDetails(link, {})
        // $10,000 a year is less than deposit insurance asks of $2,000 rent (24 times): a cash deposit is left.
        const offered = yield* journey.supplyUnderwritingInputs(link, { ...ANSWERS, yearlyIncome: "10000" })
        assert.strictEqual(offered.step, "choose")
        assert.deepStrictEqual(
          offered.offers.map((o) => o.product),
          ["cash_deposit"],
        )
        const prospect = (yield* getProspect(partner, slug, SOURCE, "low-income-1")).body.prospect
        assert.deepStrictEqual(
          (prospect.offered_products as Array<{ product_type: string }>).map((o) => o.product_type),
          ["cash_deposit"],
        )
        assert.isNull(prospect.percent_savings)
        const quoted = yield* journey.choose(link, { product: "cash_deposit" })
        assert.strictEqual(quoted.step, "quote")
        const paid = yield* journey.pay(link, { cardNumber: TEST_CARDS.ok, ...CARD })
        assert.strictEqual(paid.step, "completed")
      }),
    )

    it.effect(
      "returns the renter to the choice, with the other offers, when underwriting refuses a product",
      () =>
        Effect.gen(function* () {
          const journey = yield* Journey
          const { partner, slug } = yield* shared
          const link = yield* readyLink("refused-1")
          yield* journey.confirmDetails(link, {})
          const offered = yield* journey.supplyUnderwritingInputs(link, ANSWERS)
          assert.deepStrictEqual(
            offered.offers.map((o) => o.product),
            ["security_deposit_insurance", "cash_deposit"],
          )
          // The partner's screening result changes after the renter answered: a rule their answers could not show.
          yield* postProspect(
            partner,
            slug,
            completeProspect(SOURCE, "refused-1", {
              email: "refused-1@example.com",
              screening_result: "denied",
            }),
          )
          yield* awaitProspect(partner, slug, SOURCE, "refused-1", (p) =>
            ((p.sdi_ineligibility_reasons as Array<string> | undefined) ?? []).includes(
              "Screening result is denied",
            ),
          )
          const refused = yield* journey.choose(link, {
            product: "security_deposit_insurance",
            cadence: "upfront",
          })
          assert.strictEqual(refused.step, "choose")
          assert.deepStrictEqual(refused.refused, {
            product: "security_deposit_insurance",
            rules: ["screening_not_denied"],
          })
          assert.deepStrictEqual(
            refused.offers.map((o) => o.product),
            ["cash_deposit"],
          )
          const prospect = (yield* getProspect(partner, slug, SOURCE, "refused-1")).body.prospect
          assert.deepStrictEqual(
            (prospect.offered_products as Array<{ product_type: string }>).map((o) => o.product_type),
            ["cash_deposit"],
          )
          assert.deepStrictEqual((yield* journey.open(link)).refused, refused.refused, "kept when reopened")
          const quoted = yield* journey.choose(link, { product: "cash_deposit" })
          assert.strictEqual(quoted.step, "quote")
          assert.isUndefined(quoted.refused)
        }),
    )

    it.effect("declines the renter only when their answers leave nothing to offer", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const { partner, slug } = yield* shared
        // No deposit to pay in cash: deposit insurance is all this prospect can be offered.
        const link = yield* readyLink("nothing-left-1", { deposit_amount_cents: 0 })
        yield* journey.confirmDetails(link, {})
        const declined = yield* journey.supplyUnderwritingInputs(link, { ...ANSWERS, yearlyIncome: "10000" })
        assert.strictEqual(declined.step, "declined")
        assert.isEmpty(declined.offers)
        assert.strictEqual((yield* journey.open(link)).step, "declined")
        const prospect = (yield* getProspect(partner, slug, SOURCE, "nothing-left-1")).body.prospect
        assert.deepStrictEqual(prospect.offered_products, [])
      }),
    )

    it.effect("keeps the quote when the same answers are sent again, and replaces it on new ones", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const link = yield* readyLink("same-answers-1")
        const quoted = yield* toQuote(link)
        assert.strictEqual(quoted.step, "quote")
        const again = yield* journey.supplyUnderwritingInputs(link, ANSWERS)
        assert.strictEqual(again.step, "quote")
        assert.strictEqual(again.quote?.applicationId, quoted.quote?.applicationId)
        const lower = yield* journey.supplyUnderwritingInputs(link, { ...ANSWERS, yearlyIncome: "10000" })
        assert.strictEqual(lower.step, "choose")
        assert.deepStrictEqual(
          lower.offers.map((o) => o.product),
          ["cash_deposit"],
        )
      }),
    )

    it.effect("publishes the offers on the prospect with links preselecting product and cadence", () =>
      Effect.gen(function* () {
        const journey = yield* Journey
        const { partner, slug } = yield* shared
        const link = yield* readyLink("offers-1")
        const before = yield* getProspect(partner, slug, SOURCE, "offers-1")
        assert.deepStrictEqual(before.body.prospect.offered_products, [])
        yield* journey.confirmDetails(link, {})
        yield* journey.supplyUnderwritingInputs(link, ANSWERS)
        const after = (yield* getProspect(partner, slug, SOURCE, "offers-1")).body.prospect
        const base = after.enrollment_url as string
        assert.deepStrictEqual(after.offered_products, [
          {
            product_type: "security_deposit_insurance",
            upfront_premium_cents: 10_000,
            monthly_premium_cents: 1_000,
            upfront_enrollment_url: `${base}&product=security_deposit_insurance&cadence=upfront`,
            monthly_enrollment_url: `${base}&product=security_deposit_insurance&cadence=monthly`,
          },
          {
            product_type: "cash_deposit",
            cash_deposit_amount_cents: 250_000,
            enrollment_url: `${base}&product=cash_deposit&cadence=upfront`,
          },
        ])
        assert.strictEqual(after.percent_savings, 96)
        const preselected = yield* journey.open(link, {
          product: "security_deposit_insurance",
          cadence: "monthly",
        })
        assert.deepStrictEqual(preselected.preselected, {
          product: "security_deposit_insurance",
          cadence: "monthly",
        })
        const unknown = yield* journey.open(link, {
          product: "renter_guarantee_insurance",
          cadence: "monthly",
        })
        assert.isUndefined(unknown.preselected)
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { lifecyclePass } from "../../backend/policies/LifecycleJob.ts"
import { addMonths } from "../../backend/policies/Domain.ts"
import { TestClocks } from "../../backend/policies/TestClocks.ts"
import { authEnv, authService, createClient, gatewayPort, httpRequest, obtainToken } from "../support/Auth.ts"
import {
  advanceClock,
  assertCatalogShapes,
  awaitDeliveries,
  dateFromToday,
  dayClockReferences,
  issuePolicy,
  lifecycleOwner,
  lifecycleService,
  showPolicy,
} from "../support/Lifecycle.ts"
import { ENROLLMENT_HOST, prospectPartner, provisionedOwner } from "../support/Prospects.ts"
import type { Json } from "../support/PublishedApi.ts"
import { startReceiver } from "../support/Receiver.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"
import { PRODUCTION } from "../support/TestPlatform.ts"

const clockRequest = (token: string, slug: string, method: "GET" | "POST", body?: string) =>
  Effect.gen(function* () {
    const path = `/partners/${slug}/test_clock${method === "POST" ? "/advance" : ""}`
    return yield* httpRequest(yield* gatewayPort("partner-api"), path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined || method === "GET" ? {} : { body }),
    })
  })

const development = lifecycleService()

layer(development.layer, { excludeTestServices: true, timeout: 180_000 })((it) => {
  describe("the test clock (development and staging)", () => {
    it.effect("moves only its owner's policies: they expire on that owner's date, others' do not", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const lease = { lease_start_date: dateFromToday(-10), lease_end_date: dateFromToday(30) }
        const walk = { product: "security_deposit_insurance", cadence: "upfront" } as const
        const ahead = yield* lifecycleOwner(receiver, "clock-ahead", "ahead", "/ahead")
        const behind = yield* lifecycleOwner(receiver, "clock-behind", "behind", "/behind")
        const aheadPolicy = yield* issuePolicy(ahead, "renter-a", walk, lease)
        const behindPolicy = yield* issuePolicy(behind, "renter-b", walk, lease)

        const shown = yield* clockRequest(ahead.partner.token, ahead.slug, "GET")
        assert.strictEqual(shown.status, 200, shown.text)
        assert.deepStrictEqual(JSON.parse(shown.text), {
          status_code: 200,
          test_clock: { offset_days: 0, today: dateFromToday(0) },
        })

        assert.deepStrictEqual(yield* advanceClock(ahead, 20), { offset_days: 20, today: dateFromToday(20) })
        assert.deepStrictEqual(yield* advanceClock(ahead, 11), { offset_days: 31, today: dateFromToday(31) })
        const received = yield* awaitDeliveries(receiver, "/ahead", (r) =>
          r.some((d) => d.event === "policy.expired"),
        )
        const expired = received.filter((d) => d.event === "policy.expired")
        assert.strictEqual(expired.length, 1)
        assert.deepInclude(expired[0]!.payload, { id: aheadPolicy.id, status: "expired" })
        assertCatalogShapes(received)

        // The same pass saw the other owner's policy, on the real date: still active, its clock untouched.
        assert.strictEqual((yield* showPolicy(behindPolicy.policyNumber)).policy.status, "active")
        assert.strictEqual((yield* showPolicy(behindPolicy.policyNumber)).owner_today, dateFromToday(0))
        assert.strictEqual((yield* showPolicy(aheadPolicy.policyNumber)).owner_today, dateFromToday(31))
        const theirs = yield* clockRequest(behind.partner.token, behind.slug, "GET")
        assert.strictEqual((JSON.parse(theirs.text) as { test_clock: Json }).test_clock.offset_days, 0)
        assert.notInclude(
          receiver
            .received("/behind")
            .map((r) => r.body.toString())
            .join(""),
          "policy.expired",
        )
      }).pipe(Effect.scoped),
    )

    it.effect(
      "a policy bought through the journey 40 days ahead on the owner's clock is issued, active and billed as of that date",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "clock-journey", "journey", "/journey")
          assert.strictEqual((yield* advanceClock(owner, 40)).today, dateFromToday(40))
          const ownerToday = dateFromToday(40)
          // The coverage starts in 20 real days: on the real date the policy would be upcoming and its monthly
          // premiums would count from the start; on the owner's date the coverage began 20 days before the sale.
          const lease = { lease_start_date: dateFromToday(20), lease_end_date: dateFromToday(400) }
          // A card expiring this (real) month: past on the owner's date, yet it pays, as cards expire in the
          // real world.
          const thisMonth = dateFromToday(0)
          const expiry = `${thisMonth.slice(5, 7)}/${thisMonth.slice(2, 4)}`
          const walk = { product: "security_deposit_insurance", cadence: "monthly", expiry } as const
          const policy = yield* issuePolicy(owner, "renter-ahead", walk, lease)
          assert.strictEqual(policy.status, "active")
          assert.strictEqual(policy.nextChargeOn, addMonths(ownerToday, 1))
          assert.match(policy.policyNumber, new RegExp(`^SDI-${ownerToday.slice(0, 4)}-\\d{6}$`))
          const shown = yield* showPolicy(policy.policyNumber)
          assert.deepInclude(shown, {
            issued_on: ownerToday,
            owner_today: ownerToday,
            next_charge_on: addMonths(ownerToday, 1),
            installments_billed: 1,
          })
          const created = yield* awaitDeliveries(receiver, "/journey", (r) =>
            r.some((d) => d.event === "policy.created"),
          )
          assert.deepInclude(created.find((d) => d.event === "policy.created")!.payload, {
            id: policy.id,
            status: "active",
            coverage_start_date: lease.lease_start_date,
          })

          // 15 days on: past a month after the coverage start, not yet a month after the sale. A pass of the
          // lifecycle job run here, after the advance, charges nothing.
          yield* advanceClock(owner, 15)
          yield* lifecyclePass
          assert.strictEqual((yield* showPolicy(policy.policyNumber)).installments_billed, 1)

          // 16 more: a month after the sale has passed on the owner's clock, and the second premium is charged.
          yield* advanceClock(owner, 16)
          const billed = yield* eventually(
            showPolicy(policy.policyNumber),
            (s) => s.installments_billed === 2,
          )
          assert.strictEqual(billed.next_charge_on, addMonths(ownerToday, 2))
          const charges = yield* query(
            (sql) => sql<Array<{ kind: string; amount_cents: string; status: string }>>`
              select c.kind, c.amount_cents::text, c.status from charges c
              join policies p on p.id = c.policy_id
              where p.policy_number = ${policy.policyNumber} order by c.id`,
          )
          assert.deepStrictEqual(
            charges.map((c) => [c.kind, Number(c.amount_cents), c.status]),
            [
              ["initial", Number(billed.premium_cents), "succeeded"],
              ["monthly", Number(billed.premium_cents), "succeeded"],
            ],
          )
        }).pipe(Effect.scoped),
    )

    it.effect(
      "refuses an advance that is not 1 to 3650 whole days, and callers without the scope or owner",
      () =>
        Effect.gen(function* () {
          const partner = yield* prospectPartner()
          const slug = yield* provisionedOwner(partner, "clock-refusals")
          for (const body of [
            '{"days":0}',
            '{"days":-3}',
            '{"days":3651}',
            '{"days":1.5}',
            '{"days":"5"}',
            "{}",
            "[]",
          ]) {
            const answer = yield* clockRequest(partner.token, slug, "POST", body)
            assert.strictEqual(answer.status, 422, `${body}: ${answer.text}`)
            const parsed = JSON.parse(answer.text) as { status_code: number; error: string; test_clock: Json }
            assert.strictEqual(parsed.status_code, 422)
            assert.strictEqual(parsed.error, "Test clock advance invalid.")
            assert.isNotEmpty(Object.keys(parsed.test_clock), body)
          }
          assert.strictEqual((yield* clockRequest(partner.token, slug, "POST", "{")).status, 400)
          const offset = yield* TestClocks.use((clocks) => clocks.show(slug))
          assert.strictEqual(offset.offset_days, 0)

          const client = yield* createClient({
            gateway: "partner",
            scopes: ["move_outs:write"],
            owners: [slug],
          })
          const narrow = yield* obtainToken("partner", client)
          for (const method of ["GET", "POST"] as const) {
            const answer = yield* clockRequest(narrow, slug, method, '{"days":1}')
            assert.deepStrictEqual([answer.status, answer.text], [403, `{"message":"Forbidden"}`], method)
          }
          const stranger = yield* prospectPartner()
          assert.strictEqual((yield* clockRequest(stranger.token, slug, "POST", '{"days":1}')).status, 403)
          assert.strictEqual((yield* clockRequest(partner.token, "no-such-owner", "GET")).status, 404)
        }),
    )
  })
})

/** Production: a real payment provider is required, so Stripe's settings (nothing is charged here). */
const production = authService({
  env: authEnv({
    ROLES: "partner-api",
    ...PRODUCTION,
    ENROLLMENT_HOST,
  }),
  references: dayClockReferences,
})

layer(production.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
  describe("the test clock in production", () => {
    it.effect("does not exist: 404 on both routes, absent from the reference, and no offset is read", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        const slug = yield* provisionedOwner(partner, "clock-production")
        for (const method of ["GET", "POST"] as const) {
          const answer = yield* clockRequest(partner.token, slug, method, '{"days":5}')
          assert.strictEqual(answer.status, 404, `${method}: ${answer.text}`)
        }
        const reference = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
        const paths = Object.keys((JSON.parse(reference.text) as { paths: Json }).paths)
        assert.include(paths, "/partners/{owner_slug}/move_outs")
        assert.isEmpty(paths.filter((path) => path.includes("test_clock")))

        // Even an offset left in the table (a database copied from staging) moves nothing.
        yield* query(
          (sql) => sql`
            insert into test_clocks (owner_id, offset_days) select id, 400 from owners where slug = ${slug}`,
        )
        const ownerId = yield* query(
          (sql) => sql<Array<{ id: string }>>`select id::text from owners where slug = ${slug}`,
        ).pipe(Effect.map((rows) => rows[0]!.id))
        assert.strictEqual(yield* TestClocks.use((clocks) => clocks.todayOf(ownerId)), dateFromToday(0))
        assert.deepStrictEqual(yield* TestClocks.use((clocks) => clocks.show(slug)), {
          offset_days: 0,
          today: dateFromToday(0),
        })
      }),
    )
  })
})

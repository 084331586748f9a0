import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { gatewayPort, httpRequest } from "../support/Auth.ts"
import { Billing } from "../../backend/policies/Billing.ts"
import { Revisions } from "../../backend/policies/Revisions.ts"
import {
  assertCatalogShapes,
  awaitDeliveries,
  dateFromToday,
  type Delivered,
  deliveries,
  issuePolicy,
  lifecycleOwner,
  lifecycleService,
  OPERATOR,
  refusal,
  revise,
  showPolicy,
} from "../support/Lifecycle.ts"
import type { Json } from "../support/PublishedApi.ts"
import { startReceiver } from "../support/Receiver.ts"
import { postBatch, postOwner, query } from "../support/Roster.ts"
import { readStream } from "../support/Streams.ts"

const service = lifecycleService()

/** The `policy_url`s announced for a policy, in arrival order. */
const documentLinks = (received: ReadonlyArray<Delivered>, id: unknown) =>
  received
    .filter((d) => d.event === "policy.documents_updated" && d.payload.id === id)
    .map((d) => d.payload.policy_url as string)

const cancelPolicy = (policyNumber: string, reason: string) =>
  Revisions.use((revisions) => revisions.cancel(policyNumber, reason, OPERATOR))

const resolveDelinquency = (id: string) => Billing.use((billing) => billing.resolve(id, OPERATOR))

/** Subjects of the policy's events on EVENTS, in stream order (the order its outbox key guarantees). */
const streamOrder = (policyId: unknown) =>
  Effect.map(readStream("EVENTS"), (messages) =>
    messages
      .filter((m) => {
        const body = m.json as { data: Record<string, Json> }
        return Object.values(body.data)[0]?.id === policyId
      })
      .map((m) => m.subject.split(".").slice(2).join(".")),
  )

layer(service.layer, { excludeTestServices: true, timeout: 240_000 })((it) => {
  describe("policy revisions and cancellation", () => {
    it.effect(
      "a revision emits policy.updated then policy.documents_updated with a new link; one ending coverage before it starts also cancels",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "revisions-org", "revisions", "/r")
          const upfront = yield* issuePolicy(owner, "upfront", {
            product: "security_deposit_insurance",
            cadence: "upfront",
          })
          const monthly = yield* issuePolicy(
            owner,
            "monthly",
            { product: "security_deposit_insurance", cadence: "monthly" },
            { lease_start_date: dateFromToday(20), lease_end_date: dateFromToday(380) },
          )
          const firstLinks = yield* awaitDeliveries(
            receiver,
            "/r",
            (r) => documentLinks(r, upfront.id).length === 1 && documentLinks(r, monthly.id).length === 1,
          ).pipe(Effect.map((r) => documentLinks(r, upfront.id)))

          // A coverage revision: policy.updated with the new amount, then a new archive at a new link.
          const revised = yield* revise(upfront.policyNumber, { coverageCents: "300000" })
          assert.deepInclude(revised, { changed: true, canceled: false, documents_generation: 2 })
          const afterRevision = yield* awaitDeliveries(
            receiver,
            "/r",
            (r) => documentLinks(r, upfront.id).length === 2,
          )
          const updated = afterRevision.filter((d) => d.event === "policy.updated")
          assert.strictEqual(updated.length, 1)
          assert.deepInclude(updated[0]!.payload, {
            id: upfront.id,
            status: "active",
            coverage_amount_cents: 300_000,
          })
          assert.notProperty(updated[0]!.payload, "policy_url")
          const links = documentLinks(afterRevision, upfront.id)
          assert.notStrictEqual(links[1], firstLinks[0])
          const newDocuments = afterRevision.find((d) => d.payload.policy_url === links[1])!
          assert.strictEqual(newDocuments.payload.coverage_amount_cents, 300_000)
          assert.deepStrictEqual(yield* streamOrder(upfront.id), [
            "policy.created",
            "policy.documents_updated",
            "policy.updated",
            "policy.documents_updated",
          ])
          const port = yield* gatewayPort("enrollment")
          for (const link of links) {
            const archive = yield* httpRequest(port, new URL(link).pathname)
            assert.strictEqual(archive.status, 200, link)
          }

          // The operator's view: the new amount, the newest documents link.
          const shown = yield* showPolicy(upfront.policyNumber)
          assert.strictEqual(shown.policy.coverage_amount_cents, 300_000)
          assert.strictEqual(shown.policy_url, links[1])
          const unchanged = yield* revise(upfront.policyNumber, { coverageCents: "300000" })
          assert.isFalse(unchanged.changed)

          // Moving the end before the start cancels: updated, canceled, and new documents all the same.
          const canceling = yield* revise(monthly.policyNumber, { end: dateFromToday(10) })
          assert.deepInclude(canceling, { changed: true, canceled: true })
          const afterCancel = yield* awaitDeliveries(
            receiver,
            "/r",
            (r) => documentLinks(r, monthly.id).length === 2,
          )
          const ofMonthly = afterCancel.filter((d) => d.payload.id === monthly.id)
          assert.deepStrictEqual(ofMonthly.map((d) => d.event).sort(), [
            "policy.canceled",
            "policy.created",
            "policy.documents_updated",
            "policy.documents_updated",
            "policy.updated",
          ])
          const revisedLink = documentLinks(afterCancel, monthly.id)[1]
          for (const d of ofMonthly.filter(
            (d) => d.event !== "policy.documents_updated" || d.payload.policy_url === revisedLink,
          )) {
            if (d.event === "policy.created") continue
            assert.strictEqual(d.payload.status, "canceled", d.event)
            assert.strictEqual(d.payload.coverage_end_date, dateFromToday(10), d.event)
          }
          assert.isNull((yield* showPolicy(monthly.policyNumber)).next_charge_on)

          // Both revisions are in the audit log, as the CLI's actor, with the state before and after.
          const audited = yield* query(
            (sql) => sql<Array<{ actor: string; action: string; target: string; details: Json }>>`
              select actor, action, target, details from audit_log
              where target in (${`policy:${upfront.policyNumber}`}, ${`policy:${monthly.policyNumber}`})
              order by id`,
          )
          assert.deepStrictEqual(
            audited.map((a) => [a.actor, a.action, a.target]),
            [
              [OPERATOR, "policies.revise", `policy:${upfront.policyNumber}`],
              [OPERATOR, "policies.revise", `policy:${monthly.policyNumber}`],
            ],
          )
          assert.deepInclude(audited[0]!.details.before as Json, {
            coverage_amount_cents: upfront.coverageAmountCents,
          })
          assert.deepInclude(audited[0]!.details.after as Json, { coverage_amount_cents: 300_000 })

          assertCatalogShapes(deliveries(receiver, "/r"))
        }).pipe(Effect.scoped),
    )

    it.effect("moves a monthly policy to the last days of 9999: no premium is due after them", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const owner = yield* lifecycleOwner(receiver, "revisions-9999-org", "revisions-9999", "/r9999")
        const monthly = yield* issuePolicy(
          owner,
          "monthly-9999",
          { product: "security_deposit_insurance", cadence: "monthly" },
          { lease_start_date: dateFromToday(20), lease_end_date: dateFromToday(380) },
        )
        assert.isNotNull((yield* showPolicy(monthly.policyNumber)).next_charge_on)
        const moved = yield* revise(monthly.policyNumber, { start: "9999-12-20", end: "9999-12-31" })
        assert.deepInclude(moved, { changed: true, canceled: false })
        const shown = yield* showPolicy(monthly.policyNumber)
        assert.deepInclude(shown.policy, {
          coverage_start_date: "9999-12-20",
          coverage_end_date: "9999-12-31",
        })
        assert.isNull(shown.next_charge_on)
      }).pipe(Effect.scoped),
    )

    it.effect("cancels a policy with a reason once, and refuses what cannot be done without a change", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const owner = yield* lifecycleOwner(receiver, "cancel-org", "cancels", "/c")
        const policy = yield* issuePolicy(owner, "renter", {
          product: "security_deposit_insurance",
          cadence: "upfront",
        })
        yield* postOwner(owner.partner, { external_org_id: "cancel-org", max_coverage_amount_cents: 400_000 })

        const refused: ReadonlyArray<
          readonly [Effect.Effect<unknown, { readonly message: string }, Revisions | Billing>, string]
        > = [
          [revise("NOPE-2026-000001", { end: "2027-01-01" }), "no policy NOPE-2026-000001"],
          [revise(policy.policyNumber, {}), "nothing to revise"],
          [revise(policy.policyNumber, { start: "2026-02-30" }), "--start must be a date"],
          [revise(policy.policyNumber, { coverageCents: "12.5" }), "whole number of cents"],
          [revise(policy.policyNumber, { coverageCents: "500000" }), "coverage ceiling of 400000"],
          [revise(policy.policyNumber, { unit: "unit-404" }), "no unit unit-404"],
          [revise(policy.policyNumber, { property: "prop-1" }), "give --unit too"],
          [cancelPolicy(policy.policyNumber, " \t "), "--reason must be"],
          [resolveDelinquency("delinquency_99"), "no delinquency delinquency_99"],
          [resolveDelinquency("tpp_1"), "not a delinquency id"],
        ]
        for (const [command, message] of refused) {
          assert.include(yield* refusal(command), message)
        }

        const canceled = yield* cancelPolicy(policy.policyNumber, "The renter bought a policy elsewhere")
        assert.strictEqual(canceled.status, "canceled")
        assert.include(yield* refusal(cancelPolicy(policy.policyNumber, "twice")), "already canceled")
        assert.include(yield* refusal(revise(policy.policyNumber, { end: "2027-06-30" })), "is canceled")
        assert.strictEqual(
          (yield* showPolicy(policy.policyNumber)).cancellation_reason,
          "The renter bought a policy elsewhere",
        )
        const received = yield* awaitDeliveries(receiver, "/c", (r) =>
          r.some((d) => d.event === "policy.canceled"),
        )
        assert.strictEqual(received.filter((d) => d.event === "policy.canceled").length, 1)
        assert.notInclude(JSON.stringify(received), "elsewhere")
        assert.strictEqual(received.filter((d) => d.event === "policy.updated").length, 0)
        assertCatalogShapes(received)
        const audited = yield* query(
          (sql) => sql<Array<{ action: string }>>`
            select action from audit_log where target = ${`policy:${policy.policyNumber}`}`,
        )
        assert.deepStrictEqual(
          audited.map((a) => a.action),
          ["policies.cancel"],
        )
      }).pipe(Effect.scoped),
    )

    it.effect(
      "moves a policy to another unit, and a building's address stops following its units once a policy is against it",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "units-org", "units", "/u")
          yield* postBatch(owner.partner, owner.slug, "properties", [
            {
              external_system_id: "prop-2",
              building_name: "Elm Court",
              address: { line_one: "77 Elm St", city: "Springfield", state: "IL", zip: "62702" },
            },
          ])
          const street = (externalId: string) =>
            query(
              (sql) => sql<Array<{ street: string; address_locked: boolean }>>`
                select street, address_locked from properties where external_system_id = ${externalId}`,
            ).pipe(Effect.map((rows) => rows[0]!))
          const sendUnit = (property: string, unit: string, lineOne: string) =>
            postBatch(owner.partner, owner.slug, "units", [
              {
                external_system_id: unit,
                property_external_id: property,
                name: unit === "unit-1" ? "4B" : "9",
                pms_unit_id: `pms-${unit}`,
                address: { line_one: lineOne, city: "Springfield", state: "IL", zip: "62702" },
              },
            ])

          // Without a policy, the second building's street follows its units.
          yield* sendUnit("prop-2", "unit-9", "77 Elm Street Apt 9")
          assert.deepStrictEqual(yield* street("prop-2"), { street: "77 Elm Street", address_locked: false })
          yield* sendUnit("prop-2", "unit-9", "79 Elm Street Apt 9")
          assert.deepStrictEqual(yield* street("prop-2"), { street: "79 Elm Street", address_locked: false })

          const policy = yield* issuePolicy(owner, "mover", {
            product: "security_deposit_insurance",
            cadence: "upfront",
          })
          const first = yield* street("prop-1")
          assert.isTrue(first.address_locked)
          yield* sendUnit("prop-1", "unit-1", "5 Birch Lane Apt 4B")
          assert.deepStrictEqual(yield* street("prop-1"), first)

          const moved = yield* revise(policy.policyNumber, { unit: "unit-9" })
          assert.strictEqual(moved.policy.pms_unit_id, "pms-unit-9")
          assert.notProperty(moved.policy, "pms_property_id")
          const shown = yield* showPolicy(policy.policyNumber)
          assert.strictEqual(shown.premises, "79 Elm Street, Springfield, IL 62702")
          assert.strictEqual(shown.unit_name, "9")

          // The building it moved to is locked now too: a unit's new address is a disagreement, not applied.
          assert.isTrue((yield* street("prop-2")).address_locked)
          yield* sendUnit("prop-2", "unit-9", "81 Elm Street Apt 9")
          assert.strictEqual((yield* street("prop-2")).street, "79 Elm Street")
          const disagreements = yield* query(
            (sql) => sql<Array<{ derived_street: string }>>`
              select derived_street from address_disagreements order by id`,
          )
          assert.deepStrictEqual(
            disagreements.map((d) => d.derived_street),
            ["5 Birch Lane", "81 Elm Street"],
          )
          const received = yield* awaitDeliveries(
            receiver,
            "/u",
            (r) => r.filter((d) => d.event === "policy.documents_updated").length === 2,
          )
          const updated = received.find((d) => d.event === "policy.updated")!
          assert.strictEqual(updated.payload.pms_unit_id, "pms-unit-9")
          assertCatalogShapes(received)
        }).pipe(Effect.scoped),
    )
  })
})

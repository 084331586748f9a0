import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as DirectoryApi from "../../backend/operator/DirectoryApi.ts"
import { awaitDeliveries, issuePolicy, lifecycleOwner, lifecycleService } from "../support/Lifecycle.ts"
import { call, operatorSession } from "../support/Operator.ts"
import { completeProspect, postProspect } from "../support/Prospects.ts"
import { startReceiver } from "../support/Receiver.ts"
import { createOwnerThroughApi, postBatch } from "../support/Roster.ts"
import { provisionProvider, query } from "../support/Webhooks.ts"

// The partner side makes the owner, the prospect and its policy; the console role serves the operator API.
const service = lifecycleService({ ROLES: "partner-api,enrollment,workers,console", CONSOLE_PORT: "0" })

/** The answer decodes with the schema the console decodes it with. */
const decodes = <S extends Schema.Top>(schema: S, body: unknown) =>
  Schema.decodeUnknownSync(schema as never)(body, { onExcessProperty: "error" }) as S["Type"]

layer(service.layer, { excludeTestServices: true, timeout: 300_000 })((it) => {
  describe("the operator API's owners, prospects and search", () => {
    it.effect(
      "an owner's page lists its bank accounts by their last four digits only, buildings and units, clients, endpoints and providers; a prospect's page its fields, decisions, status history, journey, application, policy and events with their deliveries; the search finds each kind of key",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "directory-org", "directory-src", "/d")
          yield* postBatch(owner.partner, owner.slug, "bank_accounts", [
            {
              external_system_id: "ba-2",
              display_name: "Reserve",
              routing_number: "021000021",
              account_number: "9876543210",
            },
          ])
          yield* provisionProvider("directory-provider", { owners: [owner.slug] })
          const issued = yield* issuePolicy(owner, "directory-renter", {
            product: "security_deposit_insurance",
            cadence: "upfront",
          })
          const received = yield* awaitDeliveries(receiver, "/d", (r) =>
            r.some((d) => d.event === "policy.created"),
          )
          const viewer = yield* operatorSession("viewer@directory.test", "viewer")

          // The owner's page.
          const page = yield* call("GET", `/api/owners/${owner.slug}`, viewer)
          assert.strictEqual(page.status, 200, page.text)
          const shown = decodes(DirectoryApi.OwnerAnswer, page.body).owner
          assert.strictEqual(shown.slug, owner.slug)
          assert.strictEqual(shown.name, "Owner directory-org")
          assert.deepStrictEqual(
            shown.bank_accounts.map((b) => [b.external_system_id, b.display_name, b.account_number_last4]),
            [
              ["ba-1", "Operating", "6789"],
              ["ba-2", "Reserve", "3210"],
            ],
          )
          // Never the number itself, whatever the field.
          assert.notInclude(page.text, "123456789")
          assert.notInclude(page.text, "9876543210")
          assert.notInclude(page.text, "sealed")
          assert.deepStrictEqual(
            shown.buildings.map((b) => [
              b.external_system_id,
              b.unit_count,
              b.units.map((u) => u.external_system_id),
            ]),
            [["prop-1", 1, ["unit-1"]]],
          )
          assert.isFalse(shown.buildings_truncated)
          assert.deepStrictEqual(
            shown.clients.map((c) => c.id),
            [owner.partner.clientId],
          )
          assert.deepStrictEqual(
            shown.endpoints.map((e) => [e.name, e.destination_url, e.provider_name]),
            [[`every event of ${owner.slug}`, receiver.url("/d"), null]],
          )
          assert.deepStrictEqual(shown.providers, [{ name: "directory-provider", coverage: "owner" }])
          const missing = yield* call("GET", "/api/owners/no-such-owner", viewer)
          assert.strictEqual(missing.status, 404)
          assert.strictEqual(missing.text, `{"status_code":404,"error":"Owner not found."}`)

          // The owners list, newest first, a page at a time.
          const other = yield* createOwnerThroughApi(owner.partner, {
            external_org_id: "directory-other",
            name: "Another owner",
          })
          const first = yield* call("GET", "/api/owner-list?limit=1", viewer)
          assert.strictEqual(first.status, 200, first.text)
          const listed = decodes(DirectoryApi.OwnerListPage, first.body)
          assert.deepStrictEqual(
            listed.owners.map((o) => o.slug),
            [other],
          )
          const second = decodes(
            DirectoryApi.OwnerListPage,
            (yield* call("GET", `/api/owner-list?limit=1&cursor=${listed.next_cursor}`, viewer)).body,
          )
          assert.deepStrictEqual(
            second.owners.map((o) => o.slug),
            [owner.slug],
          )
          assert.isNull(second.next_cursor)
          const byName = decodes(
            DirectoryApi.OwnerListPage,
            (yield* call("GET", "/api/owner-list?q=DIRECTORY-org", viewer)).body,
          )
          assert.deepStrictEqual(
            byName.owners.map((o) => [o.slug, o.properties, o.units]),
            [[owner.slug, 1, 1]],
          )
          assert.strictEqual((yield* call("GET", "/api/owner-list?cursor=%25%27", viewer)).status, 422)

          // The prospect's page.
          const [prospect] = yield* query(
            (sql) => sql<Array<{ id: string }>>`
              select id::text from prospects where source_prospect_id = 'directory-renter'`,
          )
          const tpp = `tpp_${prospect!.id}`
          const read = yield* call("GET", `/api/prospects/${tpp}`, viewer)
          assert.strictEqual(read.status, 200, read.text)
          const detail = decodes(DirectoryApi.ProspectAnswer, read.body).prospect
          assert.strictEqual(detail.id, tpp)
          assert.strictEqual(detail.owner_slug, owner.slug)
          assert.strictEqual(detail.source_prospect_id, "directory-renter")
          assert.strictEqual(detail.fields.email, "directory-renter@example.com")
          assert.notProperty(detail.fields, "social_security_number_sealed")
          assert.deepStrictEqual(
            detail.decisions.map((d) => [d.version, d.status, d.eligible]),
            [[1, "ready", true]],
          )
          assert.deepStrictEqual(detail.decisions[0]!.sdi_ineligibility_reasons, [])
          assert.deepStrictEqual(
            detail.status_history.map((s) => s.status),
            ["ready"],
          )
          const readyEvent = received.find((d) => d.event === "prospect.ready" && d.payload.id === tpp)!
          assert.strictEqual(detail.enrollment.enrollment_url, readyEvent.payload.enrollment_url)
          assert.isNotNull(detail.enrollment.details_confirmed_at)
          assert.deepStrictEqual(
            detail.applications.map((a) => [a.product_type, a.cadence]),
            [["security_deposit_insurance", "upfront"]],
          )
          // Its payment attempts: the charge that paid, with the card tried.
          const [application] = detail.applications
          assert.deepStrictEqual(
            application!.payments.map((p) => [p.kind, p.status, p.failure_reason]),
            [["initial", "succeeded", null]],
          )
          assert.match(application!.payments[0]!.card_last4, /^\d{4}$/)
          // A declined attempt, as the processor answered it, is shown with its reason, oldest first.
          yield* query(
            (sql) => sql`
              with card as (
                insert into payment_methods (provider, reference, last4, brand)
                values ('test', 'directory-declined', '0341', 'visa') returning id
              )
              insert into charges (application_id, payment_method_id, kind, amount_cents, status, failure_reason,
                                   idempotency_key, created_at)
              select ${application!.id}, card.id, 'initial', 12500, 'declined', 'Your card was declined.',
                     'directory-declined', now() - interval '1 hour'
              from card`,
          )
          const again = decodes(
            DirectoryApi.ProspectAnswer,
            (yield* call("GET", `/api/prospects/${tpp}`, viewer)).body,
          ).prospect
          assert.deepInclude(again.applications[0]!.payments[0], {
            kind: "initial",
            amount_cents: 12500,
            status: "declined",
            failure_reason: "Your card was declined.",
            card_brand: "visa",
            card_last4: "0341",
          })
          assert.strictEqual(again.applications[0]!.payments.length, 2)
          assert.deepStrictEqual(
            detail.policies.map((p) => [p.id, p.policy_number]),
            [[issued.id, issued.policyNumber]],
          )
          assert.deepStrictEqual(
            detail.events.map((e) => e.event),
            ["prospect.created", "prospect.ready"],
          )
          // Each event with its delivery to the owner's endpoint: the one the receiver got.
          for (const event of detail.events) {
            const key = event.event === "prospect.created" ? "directory-renter" : tpp
            const got = received.find((d) => d.event === event.event && d.payload.id === key)!
            assert.deepStrictEqual(
              event.deliveries.map((d) => [String(d.id), d.status]),
              [[got.deliveryId, "delivered"]],
              event.event,
            )
          }
          for (const id of ["tpp_99999999", "17", "tpp_x", "tpp_99999999999999999999999"]) {
            const gone = yield* call("GET", `/api/prospects/${id}`, viewer)
            assert.strictEqual(gone.status, 404, id)
            assert.strictEqual(gone.text, `{"status_code":404,"error":"Prospect not found."}`, id)
          }

          // The search: each kind of key goes to its page.
          const search = (q: string) =>
            Effect.map(call("GET", `/api/search?q=${encodeURIComponent(q)}`, viewer), (answer) => {
              assert.strictEqual(answer.status, 200, `${q}: ${answer.text}`)
              return decodes(DirectoryApi.SearchAnswer, answer.body).results
            })
          const paths = (q: string) => Effect.map(search(q), (results) => results.map((r) => r.path))
          const deliveryId = readyEvent.deliveryId
          const endpointId = detail.events[0]!.deliveries[0]!.endpoint_id
          assert.deepStrictEqual(yield* paths(tpp), [`/prospects/${tpp}`])
          assert.deepStrictEqual(yield* paths(tpp.toUpperCase()), [`/prospects/${tpp}`])
          assert.deepStrictEqual(yield* paths("directory-renter"), [`/prospects/${tpp}`])
          assert.deepStrictEqual(yield* paths("Directory-Renter@Example.com"), [`/prospects/${tpp}`])
          assert.deepStrictEqual(yield* paths(issued.policyNumber.toLowerCase()), [`/policies/${issued.id}`])
          assert.deepStrictEqual(yield* paths(owner.slug), [`/owners/${owner.slug}`])
          assert.deepStrictEqual(yield* paths("owner directory-ORG"), [`/owners/${owner.slug}`])
          assert.include(yield* paths(deliveryId), `/deliveries/${deliveryId}`)
          // As the lists write ids.
          assert.include(yield* paths(`#${deliveryId}`), `/deliveries/${deliveryId}`)
          // An event's id: its deliveries.
          const readyShown = detail.events.find((e) => e.event === "prospect.ready")!
          assert.deepStrictEqual(
            yield* paths(readyShown.event_id),
            readyShown.deliveries.map((d) => `/deliveries/${d.id}`),
          )
          // The renter's name, its start, ignoring case; first and last together.
          for (const name of ["John", "doe", "JOHN DOE", "jo do"])
            assert.include(yield* paths(name), `/prospects/${tpp}`, name)
          assert.notInclude(yield* paths("Jane"), `/prospects/${tpp}`)
          assert.notInclude(yield* paths("doe john"), `/prospects/${tpp}`)
          assert.include(yield* paths(String(endpointId)), `/endpoints/${endpointId}`)
          const [one] = yield* search(` ${tpp} `)
          assert.strictEqual(one!.kind, "prospect")
          assert.include(one!.detail, owner.slug)

          // Several matches: a second prospect with the same email, and both owners named alike.
          yield* postProspect(
            owner.partner,
            owner.slug,
            completeProspect(owner.source, "directory-second", { email: "directory-renter@example.com" }),
          )
          const both = yield* search("directory-renter@example.com")
          assert.strictEqual(both.length, 2)
          assert.deepStrictEqual(
            both.map((r) => r.kind),
            ["prospect", "prospect"],
          )
          assert.deepStrictEqual(yield* search("no such thing anywhere"), [])

          // Hostile text: a short list or nothing, never a 500.
          for (const q of [
            "%",
            "_",
            "\\",
            "'",
            '"',
            "' or 1=1 --",
            "%%%'\"",
            "Ωmega 名前 🏠",
            "a".repeat(200),
            "tpp_",
            "0",
            "999999999999999999999",
          ]) {
            yield* search(q)
          }
          for (const [q, message] of [
            ["a".repeat(201), "is too long (maximum is 200 characters)"],
            ["", "is required"],
            ["   ", "is required"],
          ] as const) {
            const refused = yield* call("GET", `/api/search?q=${encodeURIComponent(q)}`, viewer)
            assert.strictEqual(refused.status, 422, q)
            assert.deepStrictEqual(refused.body.filter, { q: message })
          }
          // A control character: the gateway refuses the request line before the route reads it.
          assert.strictEqual((yield* call("GET", "/api/search?q=a%01b", viewer)).status, 400)
          const noQuery = yield* call("GET", "/api/search", viewer)
          assert.strictEqual(noQuery.status, 422)

          // Signed out, nothing.
          assert.strictEqual((yield* call("GET", `/api/search?q=${tpp}`)).status, 401)
          assert.strictEqual((yield* call("GET", `/api/owners/${owner.slug}`)).status, 401)
          assert.strictEqual((yield* call("GET", `/api/prospects/${tpp}`)).status, 401)
        }).pipe(Effect.scoped),
    )
  })
})

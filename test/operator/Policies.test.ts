import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FORBIDDEN } from "../support/Auth.ts"
import {
  advanceClock,
  awaitDeliveries,
  dateFromToday,
  type Delivered,
  issuePolicy,
  lifecycleOwner,
  lifecycleService,
  showPolicy,
} from "../support/Lifecycle.ts"
import { call, operatorSession } from "../support/Operator.ts"
import type { Json } from "../support/PublishedApi.ts"
import { startReceiver } from "../support/Receiver.ts"
import { query } from "../support/Roster.ts"
import { readStream } from "../support/Streams.ts"

// The partner side issues policies (enrollment, workers); the console role serves the operator API.
const service = lifecycleService({ ROLES: "partner-api,enrollment,workers,console", CONSOLE_PORT: "0" })

const documentLinks = (received: ReadonlyArray<Delivered>, id: unknown) =>
  received
    .filter((d) => d.event === "policy.documents_updated" && d.payload.id === id)
    .map((d) => d.payload.policy_url as string)

/** Subjects of the policy's events on EVENTS, in stream order. */
const streamOrder = (policyId: unknown) =>
  Effect.map(readStream("EVENTS"), (messages) =>
    messages
      .filter((m) => Object.values((m.json as { data: Record<string, Json> }).data)[0]?.id === policyId)
      .map((m) => m.subject.split(".").slice(2).join(".")),
  )

const auditOf = (target: string) =>
  query(
    (sql) => sql<Array<{ actor: string; channel: string; action: string; before: Json; after: Json }>>`
      select actor, channel, action, before, after from audit_log where target = ${target} order by id`,
  )

layer(service.layer, { excludeTestServices: true, timeout: 240_000 })((it) => {
  describe("the operator API's policies", () => {
    it.effect(
      "a viewer reads a policy by its admin_policy_url id or number; an operator revises it (policy.updated, then new documents) and cancels it, audited as console",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "console-policies-org", "console-policies", "/p")
          const issued = yield* issuePolicy(owner, "console-renter", {
            product: "security_deposit_insurance",
            cadence: "upfront",
          })
          const first = yield* awaitDeliveries(
            receiver,
            "/p",
            (r) => documentLinks(r, issued.id).length === 1,
          )
          const adminUrl = first.find((d) => d.event === "policy.created")!.payload.admin_policy_url as string
          const path = new URL(adminUrl).pathname
          assert.strictEqual(path, `/policies/${issued.id}`)
          const viewer = yield* operatorSession("viewer@policies.test", "viewer")
          const operator = yield* operatorSession("operator@policies.test", "operator")

          // The page's read: the policy as `policies show` has it, flattened, with an empty history.
          const read = yield* call("GET", `/api${path}`, viewer)
          assert.strictEqual(read.status, 200, read.text)
          const shown = yield* showPolicy(issued.policyNumber)
          assert.deepStrictEqual(read.body.policy, {
            ...shown.policy,
            ...Object.fromEntries(Object.entries(shown).filter(([key]) => key !== "policy")),
            revisions: [],
          })
          assert.strictEqual(read.body.policy.policy_url, documentLinks(first, issued.id)[0])
          assert.deepStrictEqual(read.body.policy.delinquencies, [])
          assert.deepStrictEqual(read.body.policy.move_outs, [])

          const byNumber = yield* call(
            "GET",
            `/api/policies?number=${encodeURIComponent(issued.policyNumber.toLowerCase())}`,
            viewer,
          )
          assert.strictEqual(byNumber.status, 200, byNumber.text)
          assert.deepStrictEqual(
            byNumber.body.policies.map((p: Json) => [p.id, p.policy_number]),
            [[issued.id, issued.policyNumber]],
          )
          assert.deepStrictEqual((yield* call("GET", "/api/policies?number=NOPE-1", viewer)).body, {
            policies: [],
            next_cursor: null,
          })
          const browsed = yield* call("GET", "/api/policies", viewer)
          assert.strictEqual(browsed.status, 200, browsed.text)
          assert.deepStrictEqual(
            browsed.body.policies.map((p: Json) => p.id),
            [issued.id],
            "without a number, the list",
          )
          for (const id of ["policy_999999", "17", "policy_x", "policy_99999999999999999999999"]) {
            const missing = yield* call("GET", `/api/policies/${id}`, viewer)
            assert.strictEqual(missing.status, 404, id)
            assert.strictEqual(missing.text, `{"status_code":404,"error":"No policy ${id}."}`, id)
          }

          // A viewer may read, not revise.
          const refused = yield* call("POST", `/api${path}/revise`, {
            ...viewer,
            body: { coverage_cents: 1000 },
          })
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.text, FORBIDDEN)

          // Bad input: a 422 naming the field, and nothing changes.
          const bad: ReadonlyArray<readonly [unknown, string]> = [
            [{}, "base"],
            [{ coverage_cents: 12.5 }, "coverage_cents"],
            [{ coverage_cents: "300000" }, "coverage_cents"],
            [{ start: "2026-02-30" }, "start"],
            [{ unit: "unit-404" }, "unit"],
            [{ coverage_cents: 999_999_999_999 }, "coverage_cents"],
          ]
          for (const [body, field] of bad) {
            const answer = yield* call("POST", `/api${path}/revise`, { ...operator, body })
            assert.strictEqual(answer.status, 422, `${JSON.stringify(body)}: ${answer.text}`)
            assert.strictEqual(answer.body.error, "Invalid revision.")
            assert.deepStrictEqual(Object.keys(answer.body.policy), [field], answer.text)
            assert.notInclude(answer.text, "--")
          }
          const notObject = yield* call("POST", `/api${path}/revise`, { ...operator, body: [1] })
          assert.strictEqual(notObject.status, 422)
          assert.deepStrictEqual(notObject.body.policy, { base: "must be an object" })
          const missingRevise = yield* call("POST", "/api/policies/policy_999999/revise", {
            ...operator,
            body: { coverage_cents: 1000 },
          })
          assert.strictEqual(missingRevise.status, 404)
          assert.lengthOf(yield* auditOf(`policy:${issued.policyNumber}`), 0)

          // The revision: policy.updated, then new documents at a new link, audited once as the console's operator.
          const revised = yield* call("POST", `/api${path}/revise`, {
            ...operator,
            body: { coverage_cents: 300_000 },
          })
          assert.strictEqual(revised.status, 200, revised.text)
          assert.deepInclude(revised.body, { changed: true, canceled: false })
          assert.strictEqual(revised.body.policy.coverage_amount_cents, 300_000)
          const afterRevision = yield* awaitDeliveries(
            receiver,
            "/p",
            (r) => documentLinks(r, issued.id).length === 2,
          )
          const updated = afterRevision.filter((d) => d.event === "policy.updated")
          assert.strictEqual(updated.length, 1)
          assert.strictEqual(updated[0]!.payload.coverage_amount_cents, 300_000)
          const links = documentLinks(afterRevision, issued.id)
          assert.notStrictEqual(links[1], links[0])
          assert.deepStrictEqual(yield* streamOrder(issued.id), [
            "policy.created",
            "policy.documents_updated",
            "policy.updated",
            "policy.documents_updated",
          ])
          const audited = yield* auditOf(`policy:${issued.policyNumber}`)
          assert.deepStrictEqual(
            audited.map((a) => [a.actor, a.channel, a.action]),
            [["operator@policies.test", "console", "policies.revise"]],
          )
          assert.deepInclude(audited[0]!.before, { coverage_amount_cents: issued.coverageAmountCents })
          assert.deepInclude(audited[0]!.after, { coverage_amount_cents: 300_000 })
          const reread = (yield* call("GET", `/api${path}`, viewer)).body.policy
          assert.strictEqual(reread.policy_url, links[1])
          assert.deepStrictEqual(
            reread.revisions.map((r: Json) => [
              r.actor,
              r.channel,
              r.action,
              (r.after as Json).coverage_amount_cents,
            ]),
            [["operator@policies.test", "console", "policies.revise", 300_000]],
          )

          // Cancellation: a reason is required; once canceled, a second one is refused.
          const noReason = yield* call("POST", `/api${path}/cancel`, { ...operator, body: { reason: " " } })
          assert.strictEqual(noReason.status, 422)
          assert.deepStrictEqual(Object.keys(noReason.body.policy), ["reason"])
          const viewerCancel = yield* call("POST", `/api${path}/cancel`, {
            ...viewer,
            body: { reason: "No" },
          })
          assert.strictEqual(viewerCancel.status, 403)
          const canceled = yield* call("POST", `/api${path}/cancel`, {
            ...operator,
            body: { reason: "The renter moved out early" },
          })
          assert.strictEqual(canceled.status, 200, canceled.text)
          assert.strictEqual(canceled.body.policy.status, "canceled")
          assert.strictEqual(canceled.body.policy.cancellation_reason, "The renter moved out early")
          const twice = yield* call("POST", `/api${path}/cancel`, { ...operator, body: { reason: "Again" } })
          assert.strictEqual(twice.status, 422)
          assert.include(twice.body.policy.base, "already canceled")
          const reviseCanceled = yield* call("POST", `/api${path}/revise`, {
            ...operator,
            body: { end: "2030-01-01" },
          })
          assert.strictEqual(reviseCanceled.status, 422)
          assert.include(reviseCanceled.body.policy.base, "is canceled")
          assert.deepStrictEqual(
            (yield* auditOf(`policy:${issued.policyNumber}`)).map((a) => [a.actor, a.channel, a.action]),
            [
              ["operator@policies.test", "console", "policies.revise"],
              ["operator@policies.test", "console", "policies.cancel"],
            ],
          )
          yield* awaitDeliveries(receiver, "/p", (r) => r.some((d) => d.event === "policy.canceled"))
        }).pipe(Effect.scoped),
    )

    it.effect("an operator resolves a delinquency the policy page lists; a viewer may not", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const owner = yield* lifecycleOwner(receiver, "console-delinquency-org", "console-delinquency", "/d")
        const issued = yield* issuePolicy(
          owner,
          "late-payer",
          { product: "security_deposit_insurance", cadence: "monthly", card: "fails-next-charge" },
          { lease_start_date: dateFromToday(5), lease_end_date: dateFromToday(370) },
        )
        yield* advanceClock(owner, 40)
        const created = yield* awaitDeliveries(receiver, "/d", (r) =>
          r.some((d) => d.event === "delinquency.created"),
        ).pipe(Effect.map((r) => r.find((d) => d.event === "delinquency.created")!.payload))
        const viewer = yield* operatorSession("viewer@delinquency.test", "viewer")
        const operator = yield* operatorSession("operator@delinquency.test", "operator")

        const page = (yield* call("GET", `/api/policies/${issued.id}`, viewer)).body.policy
        assert.deepStrictEqual(
          page.delinquencies.map((d: Json) => [d.id, d.status, d.amount_cents]),
          [[created.id, "active", created.amount_cents]],
        )
        const resolvePath = `/api/delinquencies/${created.id}/resolve`
        assert.strictEqual((yield* call("POST", resolvePath, viewer)).status, 403)
        for (const id of ["delinquency_999999", "tpp_1", "12"]) {
          const missing = yield* call("POST", `/api/delinquencies/${id}/resolve`, operator)
          assert.strictEqual(missing.status, 404, id)
          assert.strictEqual(missing.text, `{"status_code":404,"error":"Delinquency not found."}`)
        }

        const resolved = yield* call("POST", resolvePath, operator)
        assert.strictEqual(resolved.status, 200, resolved.text)
        assert.deepInclude(resolved.body.delinquency, { id: created.id, status: "resolved", amount_cents: 0 })
        const again = yield* call("POST", resolvePath, operator)
        assert.strictEqual(again.status, 422)
        assert.include(again.body.delinquency.base, "already resolved")
        const audited = yield* auditOf(`delinquency:${created.id}`)
        assert.deepStrictEqual(
          audited.map((a) => [a.actor, a.channel, a.action]),
          [["operator@delinquency.test", "console", "delinquencies.resolve"]],
        )
        yield* awaitDeliveries(receiver, "/d", (r) => r.some((d) => d.event === "delinquency.resolved"))
        const after = (yield* call("GET", `/api/policies/${issued.id}`, viewer)).body.policy
        assert.strictEqual(after.delinquencies[0].status, "resolved")
      }).pipe(Effect.scoped),
    )
  })
})

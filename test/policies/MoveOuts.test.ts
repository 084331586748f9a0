import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createClient, gatewayPort, httpRequest, obtainToken } from "../support/Auth.ts"
import { enrollmentService } from "../support/Enrollment.ts"
import {
  assertCatalogShapes,
  awaitDeliveries,
  issuePolicy,
  lifecycleOwner,
  showPolicy,
} from "../support/Lifecycle.ts"
import { at } from "../support/OpenApi.ts"
import type { Json } from "../support/PublishedApi.ts"
import { startReceiver } from "../support/Receiver.ts"
import { postJson, type RosterPartner } from "../support/Roster.ts"
import { readStream } from "../support/Streams.ts"

const service = enrollmentService()

interface MoveOutBody {
  readonly status_code: number
  readonly error?: string
  readonly move_out: Json
  readonly errors?: Record<string, Array<string>>
}

const postMoveOut = (partner: RosterPartner, slug: string, body: unknown) =>
  postJson<MoveOutBody>(partner, `/partners/${slug}/move_outs`, body)

layer(service.layer, { excludeTestServices: true, timeout: 180_000 })((it) => {
  describe("POST /partners/{owner_slug}/move_outs", () => {
    it.effect("creates a move-out once (move_out.initiated), however often it is resent", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const owner = yield* lifecycleOwner(receiver, "move-org", "moves", "/m")
        const policy = yield* issuePolicy(owner, "leaver", {
          product: "security_deposit_insurance",
          cadence: "upfront",
        })
        const moveOut = {
          external_id: "mo-1",
          policy_number: policy.policyNumber,
          move_out_date: "2026-12-31",
        }

        const first = yield* postMoveOut(owner.partner, owner.slug, { move_out: moveOut })
        assert.strictEqual(first.status, 200, first.text)
        assert.strictEqual(first.body.status_code, 201)
        assert.deepInclude(first.body.move_out, {
          external_id: "mo-1",
          status: "initiated",
          policy_number: policy.policyNumber,
          move_out_date: "2026-12-31",
        })
        const id = first.body.move_out.id
        assert.isTrue(Number.isInteger(id), String(id))

        for (const resend of [
          moveOut,
          { external_id: "mo-1" },
          { ...moveOut, move_out_date: "2027-01-15" },
        ]) {
          const again = yield* postMoveOut(owner.partner, owner.slug, { move_out: resend })
          assert.strictEqual(again.status, 200, again.text)
          assert.strictEqual(again.body.status_code, 200)
          assert.strictEqual(again.body.move_out.id, id)
        }
        const last = yield* postMoveOut(owner.partner, owner.slug, { move_out: { external_id: "mo-1" } })
        assert.strictEqual(last.body.move_out.move_out_date, "2027-01-15")

        // A second move-out of the same policy comes after the first on the policy's key: once it is delivered,
        // anything the resends had emitted would have been too.
        const second = yield* postMoveOut(owner.partner, owner.slug, {
          move_out: { ...moveOut, external_id: "mo-2" },
        })
        assert.strictEqual(second.body.status_code, 201)
        const received = yield* awaitDeliveries(receiver, "/m", (r) =>
          r.some((d) => d.event === "move_out.initiated" && d.payload.external_id === "mo-2"),
        )
        const initiated = received.filter((d) => d.event === "move_out.initiated")
        assert.deepStrictEqual(
          initiated.map((d) => d.payload),
          [
            { move_out_id: id, external_id: "mo-1", status: "initiated" },
            { move_out_id: second.body.move_out.id, external_id: "mo-2", status: "initiated" },
          ],
        )
        const stream = yield* readStream("EVENTS")
        assert.strictEqual(stream.filter((m) => m.subject.endsWith(".move_out.initiated")).length, 2)
        assertCatalogShapes(received)
        assert.deepStrictEqual(
          (yield* showPolicy(policy.policyNumber)).move_outs.map((m) => [m.external_id, m.move_out_date]),
          [
            ["mo-1", "2027-01-15"],
            ["mo-2", "2026-12-31"],
          ],
        )
      }).pipe(Effect.scoped),
    )

    it.effect("answers another owner's policy exactly as an unknown one, and bad input with a 422", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const owner = yield* lifecycleOwner(receiver, "move-a", "moves-a", "/a")
        const other = yield* lifecycleOwner(receiver, "move-b", "moves-b", "/b")
        const mine = yield* issuePolicy(owner, "mine", {
          product: "security_deposit_insurance",
          cadence: "upfront",
        })
        const theirs = yield* issuePolicy(other, "theirs", {
          product: "security_deposit_insurance",
          cadence: "upfront",
        })

        const unknown = yield* postMoveOut(owner.partner, owner.slug, {
          move_out: { external_id: "x-1", policy_number: "SDI-1999-000001", move_out_date: "2026-12-31" },
        })
        const foreign = yield* postMoveOut(owner.partner, owner.slug, {
          move_out: { external_id: "x-1", policy_number: theirs.policyNumber, move_out_date: "2026-12-31" },
        })
        assert.strictEqual(foreign.status, 422)
        assert.strictEqual(foreign.text, unknown.text)
        assert.deepStrictEqual(foreign.body, {
          status_code: 422,
          error: "Move-out invalid.",
          move_out: { policy_number: "Policy not found" },
          errors: { policy_number: ["Policy not found"] },
        })

        const created = yield* postMoveOut(owner.partner, owner.slug, {
          move_out: { external_id: "x-2", policy_number: mine.policyNumber, move_out_date: "2026-12-31" },
        })
        assert.strictEqual(created.body.status_code, 201)

        const invalid: ReadonlyArray<readonly [unknown, ReadonlyArray<string>]> = [
          [{}, ["move_out"]],
          [[], ["move_out"]],
          [{ move_out: [] }, ["move_out"]],
          [{ move_out: "mo" }, ["move_out"]],
          [{ move_out: { policy_number: mine.policyNumber, move_out_date: "2026-12-31" } }, ["external_id"]],
          [{ move_out: { external_id: "" } }, ["external_id"]],
          [{ move_out: { external_id: "x-3" } }, ["policy_number", "move_out_date"]],
          [
            {
              move_out: { external_id: "x-3", policy_number: mine.policyNumber, move_out_date: "2026-02-30" },
            },
            ["move_out_date"],
          ],
          [
            { move_out: { external_id: "x-3", policy_number: mine.policyNumber, move_out_date: 20261231 } },
            ["move_out_date"],
          ],
          [{ move_out: { external_id: "x\u0001", policy_number: mine.policyNumber } }, ["external_id"]],
          [{ move_out: { external_id: "x".repeat(256), policy_number: mine.policyNumber } }, ["external_id"]],
          [{ move_out: { external_id: 7, policy_number: mine.policyNumber } }, ["external_id"]],
          [{ move_out: { external_id: "x-2", policy_number: theirs.policyNumber } }, ["policy_number"]],
        ]
        for (const [body, fields] of invalid) {
          const answer = yield* postMoveOut(owner.partner, owner.slug, body)
          assert.strictEqual(answer.status, 422, `${JSON.stringify(body)}: ${answer.text}`)
          assert.strictEqual(answer.body.status_code, 422)
          assert.strictEqual(answer.body.error, "Move-out invalid.")
          assert.sameMembers(Object.keys(answer.body.move_out), [...fields], answer.text)
          assert.sameMembers(Object.keys(answer.body.errors!), [...fields], answer.text)
        }

        const port = yield* gatewayPort("partner-api")
        const raw = (token: string, slug: string, body: string) =>
          httpRequest(port, `/partners/${slug}/move_outs`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body,
          })
        const notJson = yield* raw(owner.partner.token, owner.slug, "{")
        assert.strictEqual(notJson.status, 400)
        assert.strictEqual((yield* raw(owner.partner.token, "no-such-owner", "{}")).status, 404)
        assert.strictEqual((yield* raw(owner.partner.token, other.slug, "{}")).status, 403)
        const client = yield* createClient({ gateway: "partner", scopes: ["prospects:write"] })
        const narrow = yield* obtainToken("partner", client)
        assert.deepStrictEqual(
          yield* raw(narrow, owner.slug, "{}").pipe(Effect.map((a) => [a.status, a.text])),
          [403, `{"message":"Forbidden"}`],
        )
        // Nothing refused was stored or emitted: only x-2 of this owner exists.
        const received = yield* awaitDeliveries(receiver, "/a", (r) =>
          r.some((d) => d.event === "move_out.initiated"),
        )
        assert.deepStrictEqual(
          received.filter((d) => d.event === "move_out.initiated").map((d) => d.payload.external_id),
          ["x-2"],
        )
        assert.strictEqual(
          receiver
            .received("/b")
            .map((r) => r.body.toString())
            .join("")
            .includes("move_out"),
          false,
        )
      }).pipe(Effect.scoped),
    )

    it.effect("is in /openapi.json with its body and answer, behind move_outs:write", () =>
      Effect.gen(function* () {
        const answer = yield* httpRequest(yield* gatewayPort("partner-api"), "/openapi.json")
        const document = JSON.parse(answer.text) as Json
        const operation = at(document, document, "paths", "/partners/{owner_slug}/move_outs", "post")
        assert.deepStrictEqual(operation.security, [{ oauth2: ["move_outs:write"] }])
        const body = at(document, operation, "requestBody", "content", "application/json", "schema")
        const input = at(document, body, "properties", "move_out")
        assert.sameMembers(Object.keys(input.properties as Json), [
          "external_id",
          "policy_number",
          "move_out_date",
        ])
        const ok = at(document, operation, "responses", "200", "content", "application/json", "schema")
        const moveOut = at(document, ok, "properties", "move_out")
        assert.strictEqual(at(document, moveOut, "properties", "id").type, "integer")
        const docs = yield* httpRequest(yield* gatewayPort("partner-api"), "/docs")
        assert.strictEqual(docs.status, 200)
      }),
    )
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import {
  EventCatalog,
  EventNames,
  type EventName,
  InsurancePolicy,
  isEventName,
  type Payload,
  ThirdPartyProspect,
} from "../../backend/events/Catalog.ts"
import { Envelopes, encodeEnvelope, makeEnvelope } from "../../backend/events/Envelope.ts"
import { DeliveryHeaders } from "../../backend/webhooks/Domain.ts"

const readyProspect = {
  id: "tpp_8f2c",
  source_prospect_id: "new-prospect-123",
  status: "ready",
  enrollment_url: "https://enroll.example.test/enrollment/embedded/acme/vero/new-prospect-123?email=a%40b.c",
  hosted_enrollment_url:
    "https://enroll.example.test/enrollment/expedited/acme/vero/new-prospect-123?email=a%40b.c",
  pms_type: "yardi",
  pms_property_id: "prop-123",
  pms_unit_id: "unit-456",
  pms_prospect_id: "prospect-789",
  guarantor_coverage: true,
  rg_eligibility_status: "eligible",
  rg_ineligibility_reasons: [],
} as const

const policy = {
  id: "policy_41",
  policy_number: "SDI-000041",
  status: "active",
  pms_type: "yardi",
  pms_property_id: "prop-123",
  pms_unit_id: "unit-456",
  pms_resident_id: "res-9",
  product_type: "security_deposit_insurance",
  coverage_amount_cents: 250000,
  coverage_start_date: "2025-02-01",
  coverage_end_date: "2026-01-31",
  admin_policy_url: "https://admin.example.test/policies/41",
} as const

/** Whether `body` is a valid `event` body with nothing extra, as the outbox encodes them. */
const decodes = (event: EventName, body: unknown) =>
  Exit.isSuccess(Schema.decodeUnknownExit(Envelopes[event])(body, { onExcessProperty: "error" }))

const body = (event: EventName, dataKey: string, payload: unknown) => ({
  event,
  property_owner_slug: "acme",
  data: { [dataKey]: payload },
})

describe("outbound webhook events", () => {
  it("catalogs exactly the fifteen event names of the spec", () => {
    assert.deepStrictEqual(EventNames, [
      "prospect.created",
      "prospect.ready",
      "prospect.incomplete",
      "policy.created",
      "policy.updated",
      "policy.canceled",
      "policy.expired",
      "policy.documents_updated",
      "policy_application.created",
      "policy_application.quoted",
      "policy_application.declined",
      "policy_application.submitted",
      "delinquency.created",
      "delinquency.resolved",
      "move_out.initiated",
    ])
  })

  it("names the data key of each family as the spec does", () => {
    const keys = Object.fromEntries(
      EventNames.map((name) => [name.split(".")[0], EventCatalog[name].dataKey]),
    )
    assert.deepStrictEqual(keys, {
      prospect: "third_party_prospect",
      policy: "insurance_policy",
      policy_application: "policy_application",
      delinquency: "delinquency",
      move_out: "move_out",
    })
    for (const name of EventNames) assert.isNotEmpty(EventCatalog[name].emittedWhen, name)
  })

  it.effect("documents each event with an example body its own schema accepts", () =>
    Effect.gen(function* () {
      for (const name of EventNames) {
        const { dataKey, example } = EventCatalog[name]
        const envelope = makeEnvelope(name, "acme", example as Payload<typeof name>)
        const encoded = yield* encodeEnvelope(envelope)
        assert.deepStrictEqual(encoded, body(name, dataKey, example), name)
      }
    }),
  )

  it("knows no event outside the catalog", () => {
    for (const name of ["prospect.updated", "policy.deleted", "move_out.completed", "*", "", "toString"]) {
      assert.isFalse(isEventName(name), name)
    }
    assert.isTrue(isEventName("move_out.initiated"))
    assert.isFalse(
      decodes("prospect.ready" as EventName, {
        event: "prospect.updated",
        property_owner_slug: "acme",
        data: { third_party_prospect: readyProspect },
      }),
    )
  })

  it.effect("sends prospect.created with only the partner's id", () =>
    Effect.gen(function* () {
      const envelope = makeEnvelope("prospect.created", "acme", { id: "new-prospect-123" })
      const encoded = yield* encodeEnvelope(envelope)
      assert.deepStrictEqual(encoded, {
        event: "prospect.created",
        property_owner_slug: "acme",
        data: { third_party_prospect: { id: "new-prospect-123" } },
      })
      assert.deepStrictEqual(Schema.decodeUnknownSync(Envelopes["prospect.created"])(encoded), envelope)
    }),
  )

  it.effect("round-trips a ready prospect with every field", () =>
    Effect.gen(function* () {
      const encoded = yield* encodeEnvelope(makeEnvelope("prospect.ready", "acme", readyProspect))
      assert.deepStrictEqual(encoded, body("prospect.ready", "third_party_prospect", readyProspect))
      assert.deepStrictEqual(Schema.decodeUnknownSync(Envelopes["prospect.ready"])(encoded), encoded)
    }),
  )

  it("allows null only on the two enrollment URLs", () => {
    const incomplete = {
      id: "tpp_1",
      source_prospect_id: "p-1",
      status: "incomplete",
      enrollment_url: null,
      hosted_enrollment_url: null,
      guarantor_coverage: false,
    }
    assert.isTrue(
      decodes("prospect.incomplete", body("prospect.incomplete", "third_party_prospect", incomplete)),
    )
    for (const field of ["pms_unit_id", "pms_type", "rg_eligibility_status", "rg_ineligibility_reasons"]) {
      const payload = { ...incomplete, [field]: null }
      assert.isFalse(
        decodes("prospect.incomplete", body("prospect.incomplete", "third_party_prospect", payload)),
        field,
      )
    }
    for (const field of ["source_prospect_id", "policy_url", "product_version", "pms_unit_id"]) {
      const payload = { ...policy, [field]: null }
      assert.isFalse(
        decodes("policy.documents_updated", body("policy.documents_updated", "insurance_policy", payload)),
        field,
      )
    }
    const withoutUrl: Record<string, unknown> = { ...incomplete }
    delete withoutUrl.enrollment_url
    assert.isFalse(decodes("prospect.ready", body("prospect.ready", "third_party_prospect", withoutUrl)))
  })

  it.effect("omits a policy's optional fields when they are absent", () =>
    Effect.gen(function* () {
      const encoded = yield* encodeEnvelope(makeEnvelope("policy.created", "acme", policy))
      const sent = (encoded.data as { insurance_policy: Record<string, unknown> }).insurance_policy
      for (const field of ["source_prospect_id", "product_version", "policy_url"]) {
        assert.isFalse(Object.hasOwn(sent, field), field)
      }
      assert.deepStrictEqual(
        JSON.parse(JSON.stringify(encoded)),
        body("policy.created", "insurance_policy", policy),
      )
    }),
  )

  it("carries product_version exactly for the renter guarantee product", () => {
    const guarantee = { ...policy, product_type: "renter_guarantee_insurance", product_version: "2025.12.01" }
    assert.isTrue(Exit.isSuccess(Schema.decodeUnknownExit(InsurancePolicy)(guarantee)))
    assert.isFalse(
      Exit.isSuccess(Schema.decodeUnknownExit(InsurancePolicy)({ ...policy, product_version: "2025.12.01" })),
    )
    assert.isFalse(
      Exit.isSuccess(
        Schema.decodeUnknownExit(InsurancePolicy)({ ...policy, product_type: "renter_guarantee_insurance" }),
      ),
    )
  })

  it("puts policy_url only on policy.documents_updated", () => {
    const withUrl = { ...policy, policy_url: "https://files.example.test/policy_41.zip" }
    const documents = Schema.decodeUnknownSync(Envelopes["policy.documents_updated"])(
      body("policy.documents_updated", "insurance_policy", withUrl),
    )
    assert.strictEqual(documents.data.insurance_policy.policy_url, withUrl.policy_url)
    // @ts-expect-error: the payload type of policy.created has no policy_url
    makeEnvelope("policy.created", "acme", { ...policy, policy_url: withUrl.policy_url })
    // @ts-expect-error: prospect.created carries nothing but the id
    makeEnvelope("prospect.created", "acme", { id: "p-1", status: "processing" })
    // The other policy events can never carry the link: refused as an excess key, dropped by a lenient reader.
    assert.isFalse(decodes("policy.created", body("policy.created", "insurance_policy", withUrl)))
    const created = Schema.decodeUnknownSync(Envelopes["policy.created"])(
      body("policy.created", "insurance_policy", withUrl),
    )
    assert.isFalse(Object.hasOwn(created.data.insurance_policy, "policy_url"))
  })

  it("uses _code identifiers on delinquencies and an integer id on move-outs", () => {
    const delinquency = {
      id: "delinquency_7",
      status: "active",
      amount_cents: 1500,
      policy_number: "SDI-000041",
      pms_property_code: "prop-123",
      pms_unit_code: "unit-456",
      pms_tenant_code: "t-9",
    }
    assert.isTrue(decodes("delinquency.created", body("delinquency.created", "delinquency", delinquency)))
    for (const code of ["pms_property_code", "pms_unit_code", "pms_tenant_code"]) {
      assert.isFalse(
        decodes(
          "delinquency.created",
          body("delinquency.created", "delinquency", { ...delinquency, [code]: 7 }),
        ),
        code,
      )
    }
    // A policy without PMS identifiers: the codes are omitted, never null.
    const withoutCodes = {
      id: delinquency.id,
      status: delinquency.status,
      amount_cents: delinquency.amount_cents,
      policy_number: delinquency.policy_number,
    }
    assert.isTrue(decodes("delinquency.created", body("delinquency.created", "delinquency", withoutCodes)))
    assert.isFalse(
      decodes(
        "delinquency.created",
        body("delinquency.created", "delinquency", { ...delinquency, pms_unit_code: null }),
      ),
    )

    const moveOut = { move_out_id: 12, external_id: "mo-1", status: "initiated" }
    assert.isTrue(decodes("move_out.initiated", body("move_out.initiated", "move_out", moveOut)))
    assert.isFalse(
      decodes(
        "move_out.initiated",
        body("move_out.initiated", "move_out", { ...moveOut, move_out_id: "12" }),
      ),
    )
    assert.isFalse(
      decodes("move_out.initiated", body("move_out.initiated", "move_out", { ...moveOut, move_out_id: 1.5 })),
    )
    assert.isFalse(
      decodes("move_out.initiated", body("move_out.initiated", "move_out", { ...moveOut, status: "done" })),
    )
  })

  it("writes an envelope with exactly event, property_owner_slug and data", () => {
    const envelope = makeEnvelope("move_out.initiated", "acme", {
      move_out_id: 1,
      external_id: "x",
      status: "initiated",
    })
    assert.deepStrictEqual(Object.keys(envelope), ["event", "property_owner_slug", "data"])
    assert.deepStrictEqual(Object.keys(envelope.data), ["move_out"])
    const decoded = Schema.decodeUnknownSync(Envelopes["move_out.initiated"])({
      ...envelope,
      id: "evt_1",
      created_at: 1,
    })
    assert.deepStrictEqual(Object.keys(decoded), ["event", "property_owner_slug", "data"])
  })

  it("rejects a payload that breaks its event's rules when encoding", () => {
    const bad = makeEnvelope("policy.created", "acme", { ...policy, product_version: "2025.12.01" })
    const exit = Effect.runSyncExit(encodeEnvelope(bad))
    assert.isTrue(Exit.isFailure(exit))
    assert.isFalse(
      Exit.isSuccess(
        Schema.decodeUnknownExit(ThirdPartyProspect)({ ...readyProspect, id: "new-prospect-123" }),
      ),
    )
  })

  it("documents a signature header with one v1 per active secret", () => {
    const signature = Schema.decodeUnknownExit(DeliveryHeaders["X-Webhook-Signature"])
    const hex = (digit: string) => digit.repeat(64)
    assert.isTrue(Exit.isSuccess(signature(`t=1700000000,v1=${hex("a")}`)))
    assert.isTrue(Exit.isSuccess(signature(`t=1700000000,v1=${hex("a")},v1=${hex("b")}`)))
    assert.isTrue(Exit.isFailure(signature("t=1700000000")))
    assert.isTrue(Exit.isFailure(signature(`t=1700000000,v1=${hex("A")}`)))
    assert.isTrue(Exit.isFailure(signature(`v1=${hex("a")},t=1700000000`)))
  })
})

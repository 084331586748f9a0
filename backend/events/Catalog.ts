import { Schema } from "effect"

/**
 * The partner events: one schema per payload and the catalog of event names, for every context that emits them,
 * the webhook router that delivers them, and the API reference that documents them. Optional fields are
 * `optionalKey`: omitted, never null. The only nulls are the two enrollment URLs.
 */

const prefixedId = (prefix: string, description: string) =>
  Schema.String.annotate({ description }).check(Schema.isStartingWith(prefix))

const url = (description: string) => Schema.String.annotate({ format: "uri", description })

const date = (description: string) =>
  Schema.String.annotate({ format: "date", description }).check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/u))

const cents = (description: string) => Schema.Int.annotate({ description })

const text = (description: string) => Schema.String.annotate({ description })

const SourceProspectId = text("The partner's own prospect identifier.")

const OptionalSourceProspectId = Schema.optionalKey(
  text(
    "The partner's prospect identifier; omitted when the record did not come from a prospect the partner created.",
  ),
)

const RENTER_GUARANTEE_VERSION_RULE =
  "Present only when `product_type` is `renter_guarantee_insurance` (first version `2025.12.01`); omitted otherwise."

/** `product_version` accompanies exactly the renter guarantee product. */
const productVersionOnlyForRenterGuarantee = Schema.makeFilter(
  (payload: { readonly product_type?: string | undefined; readonly product_version?: string | undefined }) =>
    (payload.product_type === "renter_guarantee_insurance") === (payload.product_version !== undefined)
      ? undefined
      : "product_version is present exactly when product_type is renter_guarantee_insurance",
  { description: RENTER_GUARANTEE_VERSION_RULE },
)

export const ProspectStatus = Schema.Literals(["incomplete", "processing", "ready", "error"]).annotate({
  identifier: "ProspectStatus",
  description: "Status of a prospect.",
})

export const PmsType = Schema.Literal("yardi").annotate({
  identifier: "PmsType",
  description: "Kind of property management system; currently one value.",
})

/** `third_party_prospect` on `prospect.created`: only the partner's own id. */
export const ThirdPartyProspectCreated = Schema.Struct({
  id: text("The partner's `source_prospect_id` (not the service id); the only field of `prospect.created`."),
}).annotate({
  identifier: "ThirdPartyProspectCreated",
  description:
    "Prospect payload of `prospect.created`: the partner's `source_prospect_id` as `id`, nothing else.",
})

/** `third_party_prospect` on `prospect.ready` and `prospect.incomplete`. */
export const ThirdPartyProspect = Schema.Struct({
  id: prefixedId("tpp_", "Service prospect id (`tpp_...`)."),
  source_prospect_id: SourceProspectId,
  status: ProspectStatus,
  enrollment_url: Schema.NullOr(url("Link on the enrollment flow the source is configured for.")).annotate({
    description: "Link on the enrollment flow the source is configured for; null unless eligible.",
  }),
  hosted_enrollment_url: Schema.NullOr(url("The same enrollment on the expedited full-page flow.")).annotate({
    description: "The same enrollment on the expedited full-page flow; null unless eligible.",
  }),
  pms_type: Schema.optionalKey(PmsType),
  pms_property_id: Schema.optionalKey(text("PMS property id, when supplied.")),
  pms_unit_id: Schema.optionalKey(text("PMS unit id, when supplied.")),
  pms_prospect_id: Schema.optionalKey(text("PMS prospect id, when supplied.")),
  guarantor_coverage: Schema.Boolean.annotate({
    description: "Whether guarantor coverage applies; always present.",
  }),
  rg_eligibility_status: Schema.optionalKey(
    Schema.Literals(["eligible", "ineligible"]).annotate({
      description:
        "Renter guarantee eligibility; present only when `guarantor_coverage` is true and eligibility is decided.",
    }),
  ),
  rg_ineligibility_reasons: Schema.optionalKey(
    Schema.Array(Schema.String).annotate({
      description:
        "Renter guarantee ineligibility reasons; present whenever `guarantor_coverage` is true (empty: no reason " +
        "recorded, including while pending); omitted when it is false.",
    }),
  ),
}).annotate({
  identifier: "ThirdPartyProspect",
  description:
    "Prospect payload of `prospect.ready` and `prospect.incomplete` (status `incomplete`, both URLs null; the " +
    "missing fields are not listed: fetch the prospect). SDA and cash-deposit reasons are never sent; read them by GET.",
})

export const PolicyStatus = Schema.Literals([
  "active",
  "upcoming",
  "pending",
  "expired",
  "canceled",
]).annotate({
  identifier: "PolicyStatus",
  description: "Status of a policy.",
})

export const PolicyProductType = Schema.Literals([
  "security_deposit_insurance",
  "renter_guarantee_insurance",
  "service_deposit",
]).annotate({ identifier: "PolicyProductType", description: "Product of a policy." })

const policyFields = {
  id: prefixedId("policy_", "Service policy id (`policy_...`)."),
  policy_number: text("Policy number."),
  status: PolicyStatus,
  pms_type: Schema.optionalKey(
    text("PMS kind of the matched resident; omitted when the renter has no PMS record."),
  ),
  pms_property_id: Schema.optionalKey(
    text("PMS property id of the matched resident; omitted when the building has none."),
  ),
  pms_unit_id: Schema.optionalKey(
    text("PMS unit id of the matched resident; omitted when the unit has none."),
  ),
  pms_resident_id: Schema.optionalKey(
    text(
      "PMS resident id of the matched resident (the prospect's `pms_prospect_id`); omitted when not supplied.",
    ),
  ),
  product_type: PolicyProductType,
  product_version: Schema.optionalKey(
    text(`Renter guarantee product version. ${RENTER_GUARANTEE_VERSION_RULE}`),
  ),
  coverage_amount_cents: cents("Coverage amount in cents."),
  coverage_start_date: date("First day of coverage (YYYY-MM-DD)."),
  coverage_end_date: date("Last day of coverage (YYYY-MM-DD)."),
  admin_policy_url: url("The policy on the operator's admin page; use as returned, do not construct."),
  source_prospect_id: OptionalSourceProspectId,
}

/** `insurance_policy` on every policy event but `policy.documents_updated`. */
export const InsurancePolicy = Schema.Struct(policyFields)
  .check(productVersionOnlyForRenterGuarantee)
  .annotate({
    identifier: "InsurancePolicy",
    description:
      "Policy payload of `policy.created`, `policy.updated`, `policy.canceled` and `policy.expired`.",
  })

/** `insurance_policy` on `policy.documents_updated`: the policy and, when an archive exists, its link. */
export const InsurancePolicyDocuments = Schema.Struct({
  ...policyFields,
  policy_url: Schema.optionalKey(
    url(
      "Link to a zip of the policy documents, present when an archive exists. Each regeneration writes a new " +
        "object, so a stored link goes stale without error: fetch and store the file. Not access-controlled.",
    ),
  ),
})
  .check(productVersionOnlyForRenterGuarantee)
  .annotate({
    identifier: "InsurancePolicyDocuments",
    description: "Policy payload of `policy.documents_updated`: the policy payload plus `policy_url`.",
  })

/** `policy_application` on every policy application event. */
export const PolicyApplication = Schema.Struct({
  id: prefixedId("pa_", "Service application id (`pa_...`)."),
  status: Schema.Literals(["created", "canceled"]).annotate({
    description: "Record status, not the underwriting outcome (the event name conveys that).",
  }),
  pms_type: Schema.optionalKey(text("PMS kind; omitted when the renter has no PMS record.")),
  pms_property_id: Schema.optionalKey(text("PMS property id; omitted when the building has none.")),
  pms_unit_id: Schema.optionalKey(text("PMS unit id; omitted when the unit has none.")),
  pms_resident_id: Schema.optionalKey(
    text("PMS resident id (the prospect's `pms_prospect_id`); omitted when not supplied."),
  ),
  source_prospect_id: OptionalSourceProspectId,
  product_type: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Omitted until a product is chosen; `renter_guarantee_insurance` only when the application is guarantor " +
        "coverage and a renter guarantee product version is set; otherwise the application's selected product.",
      examples: [
        "security_deposit_insurance",
        "renter_guarantee_insurance",
        "cash_deposit",
        "external_cash_deposit",
      ],
    }),
  ),
  product_version: Schema.optionalKey(
    text(`Renter guarantee product version. ${RENTER_GUARANTEE_VERSION_RULE}`),
  ),
})
  .check(productVersionOnlyForRenterGuarantee)
  .annotate({ identifier: "PolicyApplication", description: "Policy application payload." })

/** `delinquency` on both delinquency events; PMS identifiers use `_code` suffixes here. */
export const Delinquency = Schema.Struct({
  id: prefixedId("delinquency_", "Service delinquency id (`delinquency_...`)."),
  status: Schema.Literals(["active", "resolved"]).annotate({ description: "Status of the delinquency." }),
  amount_cents: cents("Outstanding amount in cents."),
  policy_number: text("The policy concerned."),
  pms_property_code: Schema.optionalKey(
    text("PMS property code of the policy's building; omitted when it has none."),
  ),
  pms_unit_code: Schema.optionalKey(text("PMS unit code of the policy's unit; omitted when it has none.")),
  pms_tenant_code: Schema.optionalKey(
    text("PMS tenant code of the insured renter; omitted when the renter has no PMS record."),
  ),
  source_prospect_id: Schema.optionalKey(
    text(
      "The partner's prospect id; omitted when the policy did not originate from a prospect the partner created.",
    ),
  ),
}).annotate({
  identifier: "Delinquency",
  description: "Delinquency payload. PMS identifiers use `_code` suffixes, unlike `_id` on policy payloads.",
})

/** `move_out` on `move_out.initiated`. */
export const MoveOut = Schema.Struct({
  move_out_id: Schema.Int.annotate({ description: "Service move-out id: a plain integer." }),
  external_id: text("The partner's identifier as sent on creation."),
  status: Schema.Literal("initiated").annotate({ description: "Status of the move-out; `initiated` today." }),
}).annotate({ identifier: "MoveOut", description: "Move-out payload." })

const prospectExample = {
  id: "tpp_2Vb7kQ",
  source_prospect_id: "new-prospect-123",
  status: "ready",
  enrollment_url:
    "https://enroll.example.com/enrollment/embedded/acme-properties/vero/new-prospect-123?email=renter%40example.com",
  hosted_enrollment_url:
    "https://enroll.example.com/enrollment/expedited/acme-properties/vero/new-prospect-123?email=renter%40example.com",
  pms_type: "yardi",
  pms_property_id: "prop-123",
  pms_unit_id: "unit-456",
  pms_prospect_id: "prospect-789",
  guarantor_coverage: true,
  rg_eligibility_status: "eligible",
  rg_ineligibility_reasons: [],
} as const satisfies typeof ThirdPartyProspect.Type

const policyExample = {
  id: "policy_8TqzR1",
  policy_number: "SDI-2025-000041",
  status: "active",
  pms_type: "yardi",
  pms_property_id: "prop-123",
  pms_unit_id: "unit-456",
  pms_resident_id: "res-789",
  product_type: "renter_guarantee_insurance",
  product_version: "2025.12.01",
  coverage_amount_cents: 250000,
  coverage_start_date: "2025-02-01",
  coverage_end_date: "2026-01-31",
  admin_policy_url: "https://admin.example.com/policies/policy_8TqzR1",
  source_prospect_id: "new-prospect-123",
} as const satisfies typeof InsurancePolicy.Type

const applicationExample = {
  id: "pa_5kW2mN",
  status: "created",
  pms_type: "yardi",
  pms_property_id: "prop-123",
  pms_unit_id: "unit-456",
  pms_resident_id: "res-789",
  source_prospect_id: "new-prospect-123",
  product_type: "security_deposit_insurance",
} as const satisfies typeof PolicyApplication.Type

const delinquencyExample = {
  id: "delinquency_3JxP0a",
  status: "active",
  amount_cents: 1500,
  policy_number: "SDI-2025-000041",
  pms_property_code: "prop-123",
  pms_unit_code: "unit-456",
  pms_tenant_code: "t0001234",
  source_prospect_id: "new-prospect-123",
} as const satisfies typeof Delinquency.Type

/** `emittedWhen` completes "emitted when ..."; `example` is a payload the event may carry. */
const event = <const K extends string, S extends Schema.Top>(
  dataKey: K,
  payload: S,
  emittedWhen: string,
  example: S["Type"],
) => ({ dataKey, payload, emittedWhen, example }) as const

/** Every outbound event: its name, the single key under `data`, the payload schema and when it is emitted. */
export const EventCatalog = {
  "prospect.created": event(
    "third_party_prospect",
    ThirdPartyProspectCreated,
    "the prospect record is first created (first partner event or first POST)",
    { id: "new-prospect-123" },
  ),
  "prospect.ready": event(
    "third_party_prospect",
    ThirdPartyProspect,
    "the prospect transitions to `ready`",
    prospectExample,
  ),
  "prospect.incomplete": event(
    "third_party_prospect",
    ThirdPartyProspect,
    "the prospect transitions to `incomplete`",
    {
      id: prospectExample.id,
      source_prospect_id: prospectExample.source_prospect_id,
      status: "incomplete",
      enrollment_url: null,
      hosted_enrollment_url: null,
      guarantor_coverage: false,
    },
  ),
  "policy.created": event("insurance_policy", InsurancePolicy, "a policy is issued", policyExample),
  "policy.updated": event(
    "insurance_policy",
    InsurancePolicy,
    "a revision is applied (no diff included)",
    policyExample,
  ),
  "policy.canceled": event(
    "insurance_policy",
    InsurancePolicy,
    "the policy status becomes `canceled` (no reason or refund amount)",
    { ...policyExample, status: "canceled" },
  ),
  "policy.expired": event("insurance_policy", InsurancePolicy, "the policy status becomes `expired`", {
    ...policyExample,
    status: "expired",
  }),
  "policy.documents_updated": event(
    "insurance_policy",
    InsurancePolicyDocuments,
    "the document archive is regenerated (after purchase and after each revision)",
    { ...policyExample, policy_url: "https://files.example.com/policies/policy_8TqzR1/documents-3.zip" },
  ),
  "policy_application.created": event(
    "policy_application",
    PolicyApplication,
    "a renter starts an application",
    {
      id: applicationExample.id,
      status: "created",
      pms_type: "yardi",
      pms_property_id: "prop-123",
      pms_unit_id: "unit-456",
      pms_resident_id: "res-789",
    },
  ),
  "policy_application.quoted": event(
    "policy_application",
    PolicyApplication,
    "underwriting accepts and pricing is available",
    applicationExample,
  ),
  "policy_application.declined": event(
    "policy_application",
    PolicyApplication,
    "underwriting declines (no reason included)",
    applicationExample,
  ),
  "policy_application.submitted": event(
    "policy_application",
    PolicyApplication,
    "the renter submits; a policy typically follows",
    applicationExample,
  ),
  "delinquency.created": event(
    "delinquency",
    Delinquency,
    "the renter misses a premium payment",
    delinquencyExample,
  ),
  "delinquency.resolved": event("delinquency", Delinquency, "the delinquency is cleared", {
    ...delinquencyExample,
    status: "resolved",
    amount_cents: 0,
  }),
  "move_out.initiated": event("move_out", MoveOut, "a move-out is created through the API", {
    move_out_id: 48213,
    external_id: "mo-2025-0117",
    status: "initiated",
  }),
} as const

export type EventName = keyof typeof EventCatalog

/** The event names in catalog order. */
export const EventNames = Object.keys(EventCatalog) as ReadonlyArray<EventName>

export const isEventName = (value: string): value is EventName => Object.hasOwn(EventCatalog, value)

export type DataKey<E extends EventName> = (typeof EventCatalog)[E]["dataKey"]
export type Payload<E extends EventName> = (typeof EventCatalog)[E]["payload"]["Type"]

import { Schema } from "effect"
import { limitedText } from "../contract/FieldLimits.ts"
import { instantProblemMessage, isCalendarDate, readInstant } from "../platform/Dates.ts"
import { PropertyItem, UnitItem } from "../roster/Domain.ts"
import { ProspectStatus } from "../events/Catalog.ts"

export const MAX_AUTHORIZED_MEMBERS = 20

/** How a source's renters enroll: inside the partner's page (iframe), or on the service's hosted page. */
export const EnrollmentFlow = Schema.Literals(["embedded", "expedited"])
export type EnrollmentFlow = typeof EnrollmentFlow.Type

/** A source code issued to a partner, and what it decides about the prospects that name it. */
export interface Source {
  readonly code: string
  readonly flow: EnrollmentFlow
  /** `screening_result`, `employment_status` and `yearly_income` are not required on its prospects. */
  readonly optionalIngestFields: boolean
  /** Hostnames (and their subdomains) a `redirect_url` on an expedited link may point to. */
  readonly redirectDomains: ReadonlyArray<string>
  /** Ids of the clients that may submit prospects and ingestion events for it. */
  readonly clients: ReadonlyArray<string>
}

/** Omitted: keep the stored value; `null`: clear it. */
const Clearable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

const CalendarDate = Schema.String.annotate({ format: "date" }).check(
  Schema.makeFilter((value: string) =>
    isCalendarDate(value) ? undefined : "is not a valid date (YYYY-MM-DD)",
  ),
)

const TIMESTAMP_FORM =
  "is not a valid timestamp (ISO 8601 with a time zone and at most milliseconds, such as 2025-01-15T10:30:00Z)"

const Timestamp = Schema.String.annotate({ format: "date-time" }).check(
  Schema.makeFilter((value: string) => {
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(value))
      return TIMESTAMP_FORM
    const read = readInstant(value)
    return "problem" in read ? instantProblemMessage(read.problem, TIMESTAMP_FORM) : undefined
  }),
)

/** A billion dollars: far above any rent or income, and small enough that coverage math stays exact. */
export const MAX_AMOUNT = 100_000_000_000

const Cents = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(0, { message: "can't be negative" }),
  Schema.isLessThanOrEqualTo(MAX_AMOUNT, { message: `can't be more than ${MAX_AMOUNT}` }),
)

/** Exactly 10 digits: no country code, no punctuation. */
const Phone = Schema.String.annotate({
  description: "Exactly 10 digits, no country code, no punctuation.",
}).check(Schema.isPattern(/^\d{10}$/, { message: "Phone is not valid" }))

const Email = limitedText("email").check(
  Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "is not a valid email address" }),
)

export const ScreeningResults = ["approved", "conditional", "denied"] as const
export const EmploymentStatuses = [
  "full_time_student",
  "employed",
  "self_employed",
  "unemployed",
  "retired",
  "corporation",
] as const

export const AuthorizedMember = Schema.Struct({
  first_name: limitedText("first_name"),
  last_name: limitedText("last_name"),
  email: Clearable(Email),
  phone: Clearable(Phone),
}).annotate({
  identifier: "AuthorizedMember",
  description: "Someone the renter authorizes to act on the enrollment.",
})

/** The prospect's own fields, as a partner sends them; nested roster items are decoded by the roster. */
export const prospectFields = {
  source: limitedText("source").annotate({ description: "The source code issued to the partner." }),
  source_prospect_id: limitedText("source_prospect_id").annotate({
    description: "The partner's prospect identifier.",
  }),
  email: Clearable(Email),
  phone: Clearable(Phone),
  first_name: Clearable(limitedText("first_name")),
  last_name: Clearable(limitedText("last_name")),
  birthdate: Clearable(CalendarDate),
  lease_start_date: Clearable(CalendarDate),
  lease_end_date: Clearable(CalendarDate),
  monthly_rent_cents: Clearable(Cents),
  deposit_amount_cents: Clearable(Cents),
  screening_result: Clearable(Schema.Literals(ScreeningResults)),
  employment_status: Clearable(Schema.Literals(EmploymentStatuses)),
  yearly_income: Clearable(Cents.annotate({ description: "Whole dollars a year." })),
  has_ssn: Clearable(Schema.Boolean),
  social_security_number: Clearable(
    Schema.String.check(Schema.isPattern(/^\d{9}$/, { message: "must be 9 digits" })).annotate({
      description: "Stored encrypted; never returned.",
    }),
  ),
  citizenship: Clearable(Schema.Literals(["us_or_green_card", "non_us"])),
  education_level: Clearable(
    Schema.Literals([
      "high_school",
      "associate_degree",
      "bachelor_degree",
      "masters_degree",
      "doctoral_degree",
    ]),
  ),
  terms_accepted_at: Clearable(Timestamp),
  authorized_members: Clearable(
    Schema.Array(AuthorizedMember).check(
      Schema.isMaxLength(MAX_AUTHORIZED_MEMBERS, {
        message: `holds at most ${MAX_AUTHORIZED_MEMBERS} members`,
      }),
    ),
  ),
  guarantor_coverage: Schema.optional(Schema.Boolean),
  pms_type: Clearable(Schema.Literal("yardi")),
  pms_property_id: Clearable(limitedText("pms_property_id")),
  pms_unit_id: Clearable(limitedText("pms_unit_id")),
  pms_prospect_id: Clearable(limitedText("pms_prospect_id")),
  property_external_id: Clearable(
    limitedText("property_external_id").annotate({
      description: "The partner's `external_system_id` of the property.",
    }),
  ),
  unit_external_id: Clearable(
    limitedText("unit_external_id").annotate({
      description: "The partner's `external_system_id` of the unit.",
    }),
  ),
}

/** What the service decodes of a prospect before handing nested items to the roster. */
export const ProspectFields = Schema.Struct(prospectFields)
export type ProspectFields = typeof ProspectFields.Type

/** A unit nested in a prospect belongs to the prospect's property unless it names another. */
export const NestedUnitItem = UnitItem.mapFields((fields) => ({
  ...fields,
  property_external_id: Schema.optional(fields.property_external_id),
})).annotate({ identifier: "NestedUnitItem" })

export const ProspectInput = Schema.Struct({
  ...prospectFields,
  property: Schema.optional(PropertyItem),
  unit: Schema.optional(NestedUnitItem),
}).annotate({
  identifier: "ProspectInput",
  description:
    "A prospect, upserted on (`source`, `source_prospect_id`). Omitted fields keep their stored value and `null` " +
    "clears one; `authorized_members` replaces the stored array. Reference the building and unit by " +
    "`property_external_id` / `unit_external_id`, by `pms_property_id` / `pms_unit_id`, or nest `property` and " +
    "`unit` in the shapes of the roster endpoints to create or update them on the way.",
})

export const ProspectRequest = Schema.Struct({ prospect: ProspectInput }).annotate({
  identifier: "ProspectRequest",
})

/** Fields every source requires before eligibility runs. */
export const REQUIRED_FIELDS = [
  "email",
  "phone",
  "first_name",
  "last_name",
  "birthdate",
  "lease_start_date",
  "lease_end_date",
  "monthly_rent_cents",
  "deposit_amount_cents",
  "has_ssn",
  "terms_accepted_at",
  "authorized_members",
] as const
/** Required too, except on sources configured for optional ingest fields. */
export const INGEST_FIELDS = ["screening_result", "employment_status", "yearly_income"] as const

const link = (description: string) =>
  Schema.NullOr(Schema.String.annotate({ format: "uri" })).annotate({ description })

/**
 * One product offered after the renter supplied the last underwriting inputs, in the published shape: deposit
 * insurance (and, where the property has it, the renter guarantee) with upfront and monthly premiums and a link
 * preselecting each cadence; a cash deposit with its amount and link.
 */
export const OfferedProduct = Schema.Struct({
  product_type: Schema.Literals(["security_deposit_insurance", "cash_deposit", "renter_guarantee_insurance"]),
  product_version: Schema.optionalKey(
    Schema.String.annotate({ description: "The renter guarantee's product version; only on that product." }),
  ),
  upfront_premium_cents: Schema.optionalKey(
    Schema.NullOr(Schema.Int.annotate({ description: "The whole premium, paid at once." })),
  ),
  monthly_premium_cents: Schema.optionalKey(
    Schema.NullOr(
      Schema.Int.annotate({ description: "One month's premium, charged each month of coverage." }),
    ),
  ),
  upfront_enrollment_url: Schema.optionalKey(
    link("The enrollment link with this product and upfront preselected."),
  ),
  monthly_enrollment_url: Schema.optionalKey(
    link("The enrollment link with this product and monthly preselected."),
  ),
  cash_deposit_amount_cents: Schema.optionalKey(
    Schema.NullOr(Schema.Int.annotate({ description: "The cash deposit the renter pays." })),
  ),
  enrollment_url: Schema.optionalKey(link("The enrollment link with the cash deposit preselected.")),
}).annotate({ identifier: "OfferedProduct" })
export type OfferedProduct = typeof OfferedProduct.Type

/** The coverage of the prospect's latest policy, once its first document archive exists. */
export const LatestCoverage = Schema.Struct({
  type: Schema.String.annotate({
    description:
      "The policy's product: `security_deposit_insurance`, `renter_guarantee_insurance` or `service_deposit`.",
  }),
  product_payment_cents: Schema.Int.annotate({
    description:
      "What each payment is: the whole premium upfront, one month's premium monthly, or the cash deposit.",
  }),
  cadence: Schema.String.annotate({ description: "`upfront` or `monthly`." }),
  coverage_start_date: Schema.String.annotate({ format: "date" }),
  coverage_end_date: Schema.String.annotate({ format: "date" }),
  coverage_amount_cents: Schema.Int,
  document_url: Schema.String.annotate({
    format: "uri",
    description: "The latest document archive (a zip); a regeneration writes a new one.",
  }),
}).annotate({ identifier: "LatestCoverage" })
export type LatestCoverage = typeof LatestCoverage.Type

const nullable = <S extends Schema.Top>(schema: S) => Schema.NullOr(schema)

export const Prospect = Schema.Struct({
  id: Schema.Int.annotate({ description: "Service prospect id; webhooks carry it as `tpp_<id>`." }),
  source: Schema.String,
  source_prospect_id: Schema.String,
  status: ProspectStatus,
  email: nullable(Schema.String),
  phone: nullable(Schema.String),
  first_name: nullable(Schema.String),
  last_name: nullable(Schema.String),
  birthdate: nullable(Schema.String),
  lease_start_date: nullable(Schema.String),
  lease_end_date: nullable(Schema.String),
  monthly_rent_cents: nullable(Schema.Int),
  deposit_amount_cents: nullable(Schema.Int),
  screening_result: nullable(Schema.Literals(ScreeningResults)),
  employment_status: nullable(Schema.Literals(EmploymentStatuses)),
  yearly_income: nullable(Schema.Int),
  has_ssn: nullable(Schema.Boolean),
  citizenship: nullable(Schema.String),
  education_level: nullable(Schema.String),
  terms_accepted_at: nullable(Schema.String),
  authorized_members: nullable(Schema.Array(AuthorizedMember)),
  pms_type: nullable(Schema.Literal("yardi")),
  pms_property_id: nullable(Schema.String),
  pms_unit_id: nullable(Schema.String),
  pms_prospect_id: nullable(Schema.String),
  property_external_id: nullable(Schema.String),
  unit_external_id: nullable(Schema.String),
  effective_coverage_amount_cents: nullable(Schema.Int).annotate({
    description:
      "The unit's (else the property's) coverage multiplier times monthly rent, capped by the owner.",
  }),
  percent_savings: Schema.NullOr(Schema.Number).annotate({
    description:
      "How much less than the cash deposit the upfront deposit insurance premium costs, in percent; null until offered.",
  }),
  enrollment_url: nullable(Schema.String).annotate({
    description: "Link on the source's flow; null until eligible for at least one product.",
  }),
  hosted_enrollment_url: nullable(Schema.String).annotate({
    description: "The same enrollment on the expedited full-page flow; null until eligible.",
  }),
  offered_products: Schema.Array(OfferedProduct).annotate({
    description:
      "Empty until the renter has supplied the last underwriting inputs in the enrollment flow; then the products " +
      "offered, priced, with links preselecting product and cadence.",
  }),
  application_submitted: Schema.Boolean.annotate({
    description: "Whether the renter submitted (paid) an application.",
  }),
  latest_coverage: Schema.NullOr(LatestCoverage).annotate({
    description: "The latest policy's coverage, once its documents exist; null before.",
  }),
  guarantor_coverage: Schema.Boolean,
  rg_eligibility_status: Schema.optionalKey(Schema.Literals(["eligible", "ineligible"])),
  rg_ineligibility_reasons: Schema.optionalKey(Schema.Array(Schema.String)),
  sdi_ineligibility_reasons: Schema.optionalKey(Schema.Array(Schema.String)),
  cd_ineligibility_reasons: Schema.optionalKey(Schema.Array(Schema.String)),
  missing_fields: Schema.Array(Schema.String).annotate({
    description: "Required fields not supplied yet: what keeps the prospect `incomplete`.",
  }),
  error_reason: Schema.optionalKey(
    Schema.String.annotate({ description: "Why eligibility could not finish; present in status `error`." }),
  ),
}).annotate({ identifier: "Prospect" })
export type Prospect = typeof Prospect.Type

export const ProspectResponse = Schema.Struct({
  status_code: Schema.Literals([200, 201]),
  prospect: Prospect,
}).annotate({ identifier: "ProspectResponse" })

export const TestResidentReset = Schema.Struct({
  status_code: Schema.Literal(200),
  reset: Schema.Struct({
    insurance_policy_ids: Schema.Array(Schema.Int),
    unlinked_yardi_resident_ids: Schema.Array(Schema.Int),
    reprocessed_prospect_id: Schema.Int,
  }),
}).annotate({ identifier: "TestResidentReset" })

export const ResidentsReset = Schema.Struct({
  status_code: Schema.Literal(200),
  reset: Schema.Struct({
    prospect_ids: Schema.Array(Schema.Int),
    insurance_policy_ids: Schema.Array(Schema.Int),
  }),
}).annotate({ identifier: "ResidentsReset" })

/** The published staging reset of an owner's test users (`DELETE /partners/{owner_slug}/test/sayrhino_users`). */
export const TestUsersReset = Schema.Struct({
  reset: Schema.Struct({
    insurance_policy_ids: Schema.Array(Schema.Int),
    third_party_prospect_ids: Schema.Array(Schema.Int),
    unlinked_yardi_resident_ids: Schema.Array(Schema.Int),
    deleted_third_party_prospect_ids: Schema.Array(Schema.Int),
  }),
  status_code: Schema.Literal(200),
}).annotate({ identifier: "TestUsersReset" })

/** Field-level refusal of a prospect: `{"status_code":422,"error":"Prospect invalid.","prospect":{...}}`. */
export class ProspectInvalid extends Schema.TaggedError<ProspectInvalid>()("ProspectInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

export class ProspectNotFound extends Schema.TaggedError<ProspectNotFound>()("ProspectNotFound", {}) {
  override get message() {
    return "no such prospect"
  }
}

/** An operator asked to decide a prospect that still lacks required fields. */
export class ProspectIncomplete extends Schema.TaggedError<ProspectIncomplete>()("ProspectIncomplete", {
  missing: Schema.Array(Schema.String),
}) {
  override get message() {
    return `the prospect is incomplete; it lacks ${this.missing.join(", ")}`
  }
}

/**
 * A prospect as the enrollment journey reads it: what the partner sent, its source, owner, building and unit as
 * they are now, and the eligibility facts the rule table reads. Dates are `YYYY-MM-DD`.
 */
export interface EnrollmentFacts {
  readonly prospect: {
    readonly id: string
    readonly version: number
    readonly source: string
    readonly sourceProspectId: string
    readonly status: "incomplete" | "processing" | "ready" | "error"
    /** Eligible for at least one product in its last decision (`ready` only). */
    readonly eligible: boolean
    readonly email: string | null
    readonly phone: string | null
    readonly firstName: string | null
    readonly lastName: string | null
    readonly birthdate: string | null
    readonly leaseStartDate: string | null
    readonly leaseEndDate: string | null
    readonly monthlyRentCents: number | null
    readonly depositAmountCents: number | null
    readonly screeningResult: "approved" | "conditional" | "denied" | null
    readonly employmentStatus: (typeof EmploymentStatuses)[number] | null
    readonly yearlyIncome: number | null
    readonly hasSsn: boolean | null
    readonly termsAcceptedAt: string | null
    readonly guarantorCoverage: boolean
    readonly pmsType: string | null
    readonly pmsPropertyId: string | null
    readonly pmsUnitId: string | null
    readonly pmsProspectId: string | null
    readonly applicationSubmitted: boolean
  }
  readonly source: {
    readonly flow: "embedded" | "expedited"
    readonly redirectDomains: ReadonlyArray<string>
  }
  readonly owner: {
    readonly id: string
    readonly slug: string
    readonly name: string
    /** The owner's brand name when it has one, else its name. */
    readonly displayName: string
    readonly active: boolean
    readonly maxCoverageAmountCents: number | null
    readonly embeddedFrameAncestors: ReadonlyArray<string>
  }
  readonly property:
    | {
        readonly id: string
        readonly buildingName: string
        readonly street: string
        readonly city: string
        readonly state: string
        readonly zip: string
        readonly active: boolean
        readonly renterGuaranteeEnabled: boolean
        readonly defaultCoverageMultiplier: number
        readonly pmsType: string | null
        readonly pmsPropertyId: string | null
        readonly policyHolderName: string
      }
    | undefined
  readonly unit:
    | {
        readonly id: string
        readonly name: string
        readonly pmsUnitId: string | null
        readonly defaultCoverageMultiplier: number | null
      }
    | undefined
  /** The enrollment links of the prospect now (null unless `ready` and eligible). */
  readonly enrollmentUrl: string | null
}

import { Schema } from "effect"
import { NullableTimestamp, Timestamp } from "./Api.ts"

/*
 * The operator API's owners, prospects and search answers (`docs/operator-api.md`), as schemas. Schema-only like
 * `Api.ts`, importing nothing but `effect`: the console decodes these answers with the same declarations.
 */

const NullableText = Schema.NullOr(Schema.String)

// Owners.

export const OwnerSummary = Schema.Struct({
  slug: Schema.String,
  name: Schema.String,
  external_org_id: Schema.String,
  purchase_flow_enabled: Schema.Boolean,
  properties: Schema.Number,
  units: Schema.Number,
  created_at: Timestamp,
})
export type OwnerSummary = typeof OwnerSummary.Type

/** `GET /api/owners/list`: owners by name, a page at a time. */
export const OwnerListPage = Schema.Struct({
  owners: Schema.Array(OwnerSummary),
  next_cursor: Schema.NullOr(Schema.String),
})
export type OwnerListPage = typeof OwnerListPage.Type

/** A bank account as the console shows it: never its number, only the number's last four digits. */
export const OwnerBankAccount = Schema.Struct({
  external_system_id: Schema.String,
  display_name: NullableText,
  routing_number: NullableText,
  account_number_last4: NullableText,
  is_default: Schema.Boolean,
})
export type OwnerBankAccount = typeof OwnerBankAccount.Type

export const OwnerUnit = Schema.Struct({
  external_system_id: NullableText,
  name: NullableText,
  line_one: NullableText,
  line_two: NullableText,
})
export type OwnerUnit = typeof OwnerUnit.Type

export const OwnerBuilding = Schema.Struct({
  external_system_id: NullableText,
  building_name: NullableText,
  street: NullableText,
  city: NullableText,
  state: NullableText,
  zip: NullableText,
  active: Schema.Boolean,
  bank_account: NullableText,
  unit_count: Schema.Number,
  units: Schema.Array(OwnerUnit),
})
export type OwnerBuilding = typeof OwnerBuilding.Type

export const OwnerClient = Schema.Struct({
  id: Schema.String,
  name: NullableText,
  gateway: Schema.String,
  scopes: Schema.Array(Schema.String),
  buildings: Schema.NullOr(Schema.Array(Schema.String)),
  granted_at: Timestamp,
  revoked_at: NullableTimestamp,
})
export type OwnerClient = typeof OwnerClient.Type

export const OwnerEndpoint = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  destination_url: Schema.String,
  status: Schema.String,
  events: Schema.Array(Schema.String),
  provider_name: NullableText,
})
export type OwnerEndpoint = typeof OwnerEndpoint.Type

export const OwnerProvider = Schema.Struct({
  name: Schema.String,
  /** `owner`: the provider covers the whole owner; `properties`: only some of its buildings. */
  coverage: Schema.Literals(["owner", "properties"]),
})
export type OwnerProvider = typeof OwnerProvider.Type

export const OwnerDetail = Schema.Struct({
  slug: Schema.String,
  name: Schema.String,
  external_org_id: Schema.String,
  managed_by_service: Schema.Boolean,
  purchase_flow_enabled: Schema.Boolean,
  max_coverage_amount_cents: Schema.NullOr(Schema.Number),
  created_at: Timestamp,
  updated_at: Timestamp,
  bank_accounts: Schema.Array(OwnerBankAccount),
  buildings: Schema.Array(OwnerBuilding),
  /** Whether buildings (or their units) were left off: the page shows the first ones only. */
  buildings_truncated: Schema.Boolean,
  clients: Schema.Array(OwnerClient),
  endpoints: Schema.Array(OwnerEndpoint),
  providers: Schema.Array(OwnerProvider),
})
export type OwnerDetail = typeof OwnerDetail.Type

/** `GET /api/owners/:slug`. */
export const OwnerAnswer = Schema.Struct({ owner: OwnerDetail })

// Prospects.

export const ProspectStatusChange = Schema.Struct({
  at: Timestamp,
  status: Schema.String,
  version: Schema.NullOr(Schema.Number),
  /** What recorded it: `eligibility.decided`, or the event that announced it. */
  via: Schema.String,
})
export type ProspectStatusChange = typeof ProspectStatusChange.Type

export const EligibilityDecision = Schema.Struct({
  at: Timestamp,
  version: Schema.Number,
  status: Schema.String,
  eligible: Schema.NullOr(Schema.Boolean),
  effective_coverage_amount_cents: Schema.NullOr(Schema.Number),
  sdi_ineligibility_reasons: Schema.NullOr(Schema.Array(Schema.String)),
  cd_ineligibility_reasons: Schema.NullOr(Schema.Array(Schema.String)),
  rg_eligibility_status: NullableText,
  rg_ineligibility_reasons: Schema.NullOr(Schema.Array(Schema.String)),
  error_reason: NullableText,
})
export type EligibilityDecision = typeof EligibilityDecision.Type

export const ProspectEventDelivery = Schema.Struct({
  id: Schema.Number,
  endpoint_id: Schema.Number,
  endpoint_name: Schema.String,
  status: Schema.String,
  attempt_number: Schema.Number,
  delivered_at: NullableTimestamp,
})
export type ProspectEventDelivery = typeof ProspectEventDelivery.Type

export const ProspectEmitted = Schema.Struct({
  event_id: Schema.String,
  event: Schema.String,
  at: Timestamp,
  deliveries: Schema.Array(ProspectEventDelivery),
})
export type ProspectEmitted = typeof ProspectEmitted.Type

/** A payment attempt of an application: a charge of the card, declined ones with the processor's reason. */
export const ProspectPayment = Schema.Struct({
  id: Schema.Number,
  kind: Schema.String,
  amount_cents: Schema.Number,
  status: Schema.String,
  failure_reason: NullableText,
  card_brand: NullableText,
  card_last4: Schema.String,
  created_at: Timestamp,
})
export type ProspectPayment = typeof ProspectPayment.Type

export const ProspectApplication = Schema.Struct({
  id: Schema.Number,
  status: Schema.String,
  outcome: NullableText,
  product_type: NullableText,
  cadence: NullableText,
  coverage_amount_cents: Schema.NullOr(Schema.Number),
  premium_cents: Schema.NullOr(Schema.Number),
  declined_rules: Schema.NullOr(Schema.Array(Schema.String)),
  submitted_at: NullableTimestamp,
  created_at: Timestamp,
  /** Its payment attempts, oldest first. */
  payments: Schema.Array(ProspectPayment),
})
export type ProspectApplication = typeof ProspectApplication.Type

export const ProspectPolicy = Schema.Struct({
  id: Schema.String,
  policy_number: Schema.String,
  status: Schema.String,
  product_type: Schema.String,
  coverage_amount_cents: Schema.Number,
  coverage_start_date: Schema.String,
  coverage_end_date: Schema.String,
})
export type ProspectPolicy = typeof ProspectPolicy.Type

export const ProspectEnrollment = Schema.Struct({
  enrollment_url: NullableText,
  hosted_enrollment_url: NullableText,
  /** The renter's journey, once begun. */
  details_confirmed_at: NullableTimestamp,
  inputs_supplied_at: NullableTimestamp,
  blocked_reason: NullableText,
  started_at: NullableTimestamp,
})
export type ProspectEnrollment = typeof ProspectEnrollment.Type

export const ProspectDetail = Schema.Struct({
  id: Schema.String,
  owner_slug: Schema.String,
  owner_name: Schema.String,
  source: Schema.String,
  source_prospect_id: Schema.String,
  status: Schema.String,
  version: Schema.Number,
  fields: Schema.Record(Schema.String, Schema.Unknown),
  created_at: Timestamp,
  updated_at: Timestamp,
  status_history: Schema.Array(ProspectStatusChange),
  decisions: Schema.Array(EligibilityDecision),
  enrollment: ProspectEnrollment,
  applications: Schema.Array(ProspectApplication),
  policies: Schema.Array(ProspectPolicy),
  events: Schema.Array(ProspectEmitted),
  /** When the streams no longer hold the prospect's oldest messages: the history starts here. */
  history_since: NullableTimestamp,
})
export type ProspectDetail = typeof ProspectDetail.Type

/** `GET /api/prospects/:id` (`tpp_<n>`). */
export const ProspectAnswer = Schema.Struct({ prospect: ProspectDetail })

// Search.

export const SearchKinds = ["owner", "prospect", "delivery", "endpoint", "policy"] as const
export const SearchKind = Schema.Literals(SearchKinds)
export type SearchKind = typeof SearchKind.Type

export const SearchHit = Schema.Struct({
  kind: SearchKind,
  /** The console's page of it. */
  path: Schema.String,
  label: Schema.String,
  detail: Schema.String,
})
export type SearchHit = typeof SearchHit.Type

/** `GET /api/search?q=`: what the text names, at most a short list. */
export const SearchAnswer = Schema.Struct({ query: Schema.String, results: Schema.Array(SearchHit) })
export type SearchAnswer = typeof SearchAnswer.Type

import { type Effect, Schema } from "effect"
import { limitedText } from "../contract/FieldLimits.ts"

/** Batches hold at most this many items; a larger one is refused whole before any item runs. */
export const MAX_BATCH = 500

/** Omitted: keep the stored value; `null`: clear it (only optional fields). */
const Clearable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/**
 * A host as a CSP host-source may name it exactly: DNS labels of letters, digits and hyphens (no `*`, `_` or
 * anything a browser would read as a pattern), an IPv4 address or a bracketed IPv6 one.
 */
const EXACT_HOST =
  /^(?:(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|\[[0-9a-f:.]+\])$/

/**
 * One exact HTTPS origin (scheme, host, optional port), as it is written into the renter pages'
 * `frame-ancestors`: a wildcard, path, query, fragment or user info would widen or break what the owner allowed.
 */
const httpsOrigin = limitedText("embedded_frame_ancestors").check(
  Schema.makeFilter((value: string) => {
    const parsed = URL.canParse(value) ? new URL(value) : undefined
    return parsed?.protocol === "https:" &&
      parsed.origin === value.replace(/\/$/, "") &&
      EXACT_HOST.test(parsed.hostname)
      ? undefined
      : "must be an HTTPS origin such as https://pms.example.com"
  }),
)

/**
 * The logo the partner portal shows for the owner: an HTTPS URL without user info, whose host a CSP `img-src`
 * can name exactly (the portal's page allows images from its origin alone).
 */
const brandLogoUrl = limitedText("brand_logo_url")
  .annotate({
    description:
      "The HTTPS URL of the logo the partner webhooks portal shows (no user or password); the portal's page " +
      "allows images from its origin.",
  })
  .check(
    Schema.makeFilter((value: string) => {
      const parsed = URL.canParse(value) ? new URL(value) : undefined
      return parsed?.protocol === "https:" &&
        parsed.username === "" &&
        parsed.password === "" &&
        EXACT_HOST.test(parsed.hostname)
        ? undefined
        : "must be an HTTPS URL without credentials, such as https://cdn.example.com/logo.png"
    }),
  )

/** The contrast white text needs on a colour: WCAG's ratio for normal text (level AA). */
export const MIN_WHITE_TEXT_CONTRAST = 4.5

/** WCAG's relative luminance of a `#rrggbb` colour. */
const luminance = (hex: string) => {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const channel = Number.parseInt(hex.slice(i, i + 2), 16) / 255
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4
  })
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
}

/** WCAG's contrast ratio of white text on a `#rrggbb` background, from 1 to 21. */
export const whiteTextContrast = (hex: string) => 1.05 / (luminance(hex) + 0.05)

const ACCENT_COLOR_FORMAT = "must be a colour written #rrggbb"

/**
 * The portal's accent colour, behind white text: `#rrggbb`, refused when the text would not be readable on it.
 * The ratio a refusal names is rounded down, so a colour just short of the minimum never reads as meeting it.
 */
const brandAccentColor = Schema.String.annotate({
  description:
    `The partner webhooks portal's accent colour, \`#rrggbb\`, behind white text: refused unless the text has at ` +
    `least ${MIN_WHITE_TEXT_CONTRAST}:1 contrast on it (WCAG AA).`,
}).check(
  Schema.makeFilter((value: string) => {
    if (!/^#[0-9a-fA-F]{6}$/.test(value)) return ACCENT_COLOR_FORMAT
    const ratio = whiteTextContrast(value)
    return ratio >= MIN_WHITE_TEXT_CONTRAST
      ? undefined
      : `must have at least ${MIN_WHITE_TEXT_CONTRAST}:1 contrast with white text (${value} has ` +
          `${(Math.floor(ratio * 10) / 10).toFixed(1)}:1)`
  }),
)

/** Coverage beyond this many months of rent is a mistake in the data, not a policy. */
export const MAX_COVERAGE_MULTIPLIER = 100

export const DefaultCoverage = Schema.Struct({
  type: Schema.Literal("multiplier"),
  value: Schema.Number.check(
    Schema.isGreaterThan(0, { message: "must be a positive multiple of monthly rent" }),
    Schema.isLessThanOrEqualTo(MAX_COVERAGE_MULTIPLIER, {
      message: `must be at most ${MAX_COVERAGE_MULTIPLIER} times monthly rent`,
    }),
  ),
}).annotate({ identifier: "DefaultCoverage", description: "Coverage as a multiple of monthly rent." })

/** Marks a field that an update may omit but a creation must carry. */
const requiredToCreate = <S extends Schema.Top>(schema: S) =>
  Schema.optional(
    schema.annotate({ description: "Required to create; an update may omit it (kept as stored)." }),
  )

export const PropertyOwnerInput = Schema.Struct({
  external_org_id: limitedText("external_org_id"),
  name: requiredToCreate(limitedText("name")),
  purchase_flow_enabled: Schema.optional(Schema.Boolean),
  max_coverage_amount_cents: Clearable(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  embedded_frame_ancestors: Clearable(Schema.Array(httpsOrigin)),
  guarantor_coverage_capable: Schema.optional(Schema.Boolean),
  brand_name: Clearable(
    limitedText("brand_name").annotate({
      description: "The name the partner webhooks portal shows; without one, the owner's `name`.",
    }),
  ),
  brand_logo_url: Clearable(brandLogoUrl),
  brand_accent_color: Clearable(brandAccentColor),
}).annotate({ identifier: "PropertyOwnerInput" })
export type PropertyOwnerInput = typeof PropertyOwnerInput.Type

export const PropertyOwner = Schema.Struct({
  external_org_id: Schema.String,
  owner_slug: Schema.String,
  name: Schema.String,
  purchase_flow_enabled: Schema.Boolean,
  active: Schema.Boolean,
  max_coverage_amount_cents: Schema.NullOr(Schema.Int),
  embedded_frame_ancestors: Schema.Array(Schema.String),
  guarantor_coverage_capable: Schema.Boolean,
  default_bank_account_external_id: Schema.NullOr(Schema.String),
  brand_name: Schema.NullOr(Schema.String),
  brand_logo_url: Schema.NullOr(Schema.String),
  brand_accent_color: Schema.NullOr(Schema.String),
}).annotate({ identifier: "PropertyOwner" })
export type PropertyOwner = typeof PropertyOwner.Type

export const PropertyOwnerResponse = Schema.Struct({
  status_code: Schema.Literals([200, 201]),
  owner_slug: Schema.String,
  property_owner: PropertyOwner,
}).annotate({ identifier: "PropertyOwnerResponse" })

/** An owner as the roster stores it: what other contexts read of an owner (`Roster.ownerBySlug`). */
export interface OwnerRow {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly external_org_id: string | null
  readonly managed_by_service: boolean
  readonly purchase_flow_enabled: boolean
  readonly max_coverage_amount_cents: string | null
  readonly embedded_frame_ancestors: Array<string>
  readonly guarantor_coverage_capable: boolean
  readonly default_bank_account_id: string | null
  readonly brand_name: string | null
  readonly brand_logo_url: string | null
  readonly brand_accent_color: string | null
}

export const BankAccountItem = Schema.Struct({
  external_system_id: limitedText("external_system_id"),
  display_name: requiredToCreate(limitedText("display_name")),
  routing_number: requiredToCreate(
    Schema.String.check(Schema.isPattern(/^\d{9}$/, { message: "must be 9 digits" })),
  ),
  account_number: requiredToCreate(
    Schema.String.check(Schema.isPattern(/^\d{1,20}$/, { message: "must be at most 20 digits" })),
  ),
  default: Schema.optional(Schema.Boolean),
}).annotate({ identifier: "BankAccountItem" })
export type BankAccountItem = typeof BankAccountItem.Type

export const PropertyTypes = [
  "single_family",
  "garden_community",
  "multifamily",
  "single_address_garden_community",
] as const
export type PropertyType = (typeof PropertyTypes)[number]
/** Building kinds that hold exactly one unit. */
export const SINGLE_UNIT_TYPES: ReadonlyArray<PropertyType> = ["single_family", "garden_community"]

export const PmsTypes = ["yardi", "realpage"] as const

const Zip = Schema.Union([limitedText("zip", { blankAllowed: true }), Schema.Int])

/** Sent whole: an address replaces the stored one, so its required parts are required every time it is sent. */
export const PropertyAddress = Schema.Struct({
  line_one: limitedText("line_one"),
  line_two: Clearable(limitedText("line_two", { blankAllowed: true })),
  city: limitedText("city"),
  state: limitedText("state"),
  zip: Zip,
  country: Clearable(limitedText("country", { blankAllowed: true })),
}).annotate({ identifier: "PropertyAddress" })

export const PropertyItem = Schema.Struct({
  external_system_id: limitedText("external_system_id"),
  building_name: requiredToCreate(limitedText("building_name")),
  address: requiredToCreate(PropertyAddress),
  type: Schema.optional(Schema.Literals(PropertyTypes)),
  policy_holder_name: Clearable(
    limitedText("policy_holder_name").annotate({
      description: "Default (and what `null` restores): the owner's name followed by `, LLC`.",
    }),
  ),
  pms_type: Clearable(Schema.Literals(PmsTypes)),
  pms_property_id: Clearable(limitedText("pms_property_id")),
  default_coverage: Clearable(DefaultCoverage),
  bank_account_external_id: Clearable(limitedText("bank_account_external_id")),
  active: Schema.optional(Schema.Boolean),
}).annotate({ identifier: "PropertyItem" })
export type PropertyItem = typeof PropertyItem.Type

export const UnitAddress = Schema.Struct({
  line_one: Schema.optional(limitedText("line_one", { blankAllowed: true })),
  line_two: Clearable(limitedText("line_two", { blankAllowed: true })),
  city: Schema.optional(limitedText("city", { blankAllowed: true })),
  state: Schema.optional(limitedText("state", { blankAllowed: true })),
  zip: Schema.optional(Zip),
}).annotate({ identifier: "UnitAddress" })

export const UnitItem = Schema.Struct({
  external_system_id: limitedText("external_system_id"),
  property_external_id: limitedText("property_external_id").annotate({
    description: "The building's `external_system_id`; with the unit's own, the unit's key, so always sent.",
  }),
  name: Clearable(limitedText("name")),
  address: Clearable(UnitAddress),
  pms_unit_id: Clearable(limitedText("pms_unit_id")),
  default_coverage: Clearable(DefaultCoverage),
}).annotate({ identifier: "UnitItem" })
export type UnitItem = typeof UnitItem.Type

const Errors = Schema.Record(Schema.String, Schema.Array(Schema.String))

/** One item's outcome; a failed item carries only `errors`, the others the stored resource's fields. */
const itemResult = <F extends Schema.Struct.Fields>(identifier: string, fields: F) =>
  Schema.Struct({
    external_system_id: Schema.String,
    action: Schema.Literals(["created", "updated", "failed"]),
    errors: Schema.optional(Errors),
    ...fields,
  }).annotate({ identifier })

export const BankAccountResult = itemResult("BankAccountResult", {
  display_name: Schema.optional(Schema.String),
  routing_number: Schema.optional(Schema.String),
  account_number_last4: Schema.optional(Schema.String),
  default: Schema.optional(Schema.Boolean),
})
export const PropertyResult = itemResult("PropertyResult", {
  building_name: Schema.optional(Schema.String),
  address: Schema.optional(
    Schema.Struct({ line_one: Schema.String, city: Schema.String, state: Schema.String, zip: Schema.String }),
  ),
  type: Schema.optional(Schema.String),
  active: Schema.optional(Schema.Boolean),
})
export const UnitResult = itemResult("UnitResult", {
  name: Schema.optional(Schema.String),
  property_external_id: Schema.optional(Schema.String),
})

export const batchResponse = <S extends Schema.Top>(identifier: string, result: S) =>
  Schema.Struct({
    status_code: Schema.Literal(200),
    results: Schema.Array(result),
    meta: Schema.Struct({ created: Schema.Int, updated: Schema.Int, failed: Schema.Int }),
  }).annotate({ identifier })

export interface ItemResult {
  readonly external_system_id: string
  readonly action: "created" | "updated" | "failed"
  readonly errors?: Record<string, Array<string>>
  readonly [field: string]: unknown
}

/** The partner's identifier of an item, even of one that does not decode, for its result. */
export const externalIdOf = (item: unknown) =>
  typeof item === "object" &&
  item !== null &&
  typeof (item as { external_system_id?: unknown }).external_system_id === "string"
    ? (item as { external_system_id: string }).external_system_id
    : ""

/** A batch's own rules: its items applied in order for the owner, whose lock the caller holds; a result per item. */
export type BatchRules = (owner: OwnerRow, items: ReadonlyArray<unknown>) => Effect.Effect<Array<ItemResult>>

export const failed = (externalSystemId: string, errors: Record<string, Array<string>>): ItemResult => ({
  external_system_id: externalSystemId,
  action: "failed",
  errors,
})

/** The owner's `external_org_id` belongs to an owner the service manages directly (409). */
export class OwnerManagedByService extends Schema.TaggedError<OwnerManagedByService>()(
  "OwnerManagedByService",
  {
    externalOrgId: Schema.String,
  },
) {}

/** An operator asked to create a managed owner whose `external_org_id` a partner-created owner already has. */
export class OwnerNotManaged extends Schema.TaggedError<OwnerNotManaged>()("OwnerNotManaged", {
  externalOrgId: Schema.String,
  slug: Schema.String,
}) {
  override get message() {
    return `${this.externalOrgId} is already the partner-created owner ${this.slug}; it cannot become a managed owner here`
  }
}

/** A first owner write without a name (the slug and default policy holder come from it). */
export class OwnerInvalid extends Schema.TaggedError<OwnerInvalid>()("OwnerInvalid", {
  fields: Schema.Record(Schema.String, Schema.String),
}) {}

/** A batch that is not an array, or holds more than `MAX_BATCH` items: refused whole. */
export class BatchRejected extends Schema.TaggedError<BatchRejected>()("BatchRejected", {
  message: Schema.String,
}) {}

/** An operator's address correction that cannot be applied (unknown owner or building, or an invalid address). */
export class AddressCorrectionRejected extends Schema.TaggedError<AddressCorrectionRejected>()(
  "AddressCorrectionRejected",
  { message: Schema.String },
) {}

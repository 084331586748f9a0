import { Schema, SchemaTransformation } from "effect"
import {
  boundedText,
  hasInvisibleCharacter,
  INVISIBLE_CHARACTER_MESSAGE,
  lengthProblem,
} from "../platform/Text.ts"

/**
 * The longest text each field of the partner contract takes, in characters (Unicode code points). One table,
 * read by the schemas that validate requests (roster, prospects, ingestion mapping, webhook endpoints), by the
 * OpenAPI document (`maxLength`) and listed in the README. The spec leaves most sizes open: these are generous
 * for real data and keep every value well inside a Postgres index entry.
 */
export const FIELD_LIMITS = {
  external_org_id: 255,
  external_system_id: 255,
  property_external_id: 255,
  unit_external_id: 255,
  bank_account_external_id: 255,
  source: 40,
  source_prospect_id: 255,
  pms_property_id: 255,
  pms_unit_id: 255,
  pms_prospect_id: 255,
  name: 255,
  building_name: 255,
  display_name: 255,
  policy_holder_name: 255,
  first_name: 255,
  last_name: 255,
  email: 254,
  line_one: 255,
  line_two: 255,
  city: 100,
  state: 64,
  zip: 10,
  country: 64,
  embedded_frame_ancestors: 2048,
  brand_name: 255,
  brand_logo_url: 2048,
  destination_url: 2048,
  client_id: 255,
  external_id: 255,
  policy_number: 64,
} as const
export type LimitedField = keyof typeof FIELD_LIMITS

/**
 * The partner's identifiers: upsert and lookup keys that a person may compare by eye. Each is stored in Unicode's
 * composed form (NFC), so a decomposed spelling names the same record, and refuses characters that show as nothing
 * or reorder text (`hasInvisibleCharacter`), so no two ids look alike yet differ.
 */
const ID_FIELDS: ReadonlySet<LimitedField> = new Set<LimitedField>([
  "external_org_id",
  "external_system_id",
  "property_external_id",
  "unit_external_id",
  "bank_account_external_id",
  "source",
  "source_prospect_id",
  "pms_property_id",
  "pms_unit_id",
  "pms_prospect_id",
  "external_id",
])

/** An identifier as it is stored and looked up: its NFC form. */
export const normalizedId = (text: string) => text.normalize("NFC")

/** What is wrong with `text` as a value of `field` (too long, a control character, an invisible one in an id). */
export const textProblem = (field: LimitedField, text: string): string | undefined =>
  lengthProblem(FIELD_LIMITS[field], text) ??
  (ID_FIELDS.has(field) && hasInvisibleCharacter(text) ? INVISIBLE_CHARACTER_MESSAGE : undefined)

const withoutInvisibleCharacters = Schema.makeFilter((text: string) =>
  hasInvisibleCharacter(text) ? INVISIBLE_CHARACTER_MESSAGE : undefined,
)

const toNfc = SchemaTransformation.transform<string, string>({ decode: normalizedId, encode: (text) => text })

/**
 * A text field of the contract: at most its limit, no control characters, and not blank unless `blankAllowed`;
 * an identifier also without invisible characters, decoded to NFC.
 */
export const limitedText = (field: LimitedField, options: { readonly blankAllowed?: boolean } = {}) => {
  const text = boundedText(FIELD_LIMITS[field], options)
  return ID_FIELDS.has(field)
    ? text.check(withoutInvisibleCharacters).pipe(Schema.decodeTo(Schema.String, toNfc))
    : text
}

import { Schema } from "effect"

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
  destination_url: 2048,
  client_id: 255,
  external_id: 255,
  policy_number: 64,
} as const
export type LimitedField = keyof typeof FIELD_LIMITS

/**
 * Whether `text` holds a C0 control (U+0000-U+001F, newlines included), DEL or a C1 control (U+0080-U+009F, which
 * some terminals read as escape sequences). No field of the contract means one, and Postgres cannot store U+0000.
 */
export const hasControlCharacter = (text: string) => {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true
  }
  return false
}

/**
 * Whether `text` holds a lone surrogate (U+D800-U+DFFF without its pair), which only a JSON `\uD800` escape can
 * produce. It is not a character: UTF-8 cannot encode it, so Postgres would store U+FFFD in its place and the
 * stored text would no longer equal the text a request named.
 */
export const hasLoneSurrogate = (text: string) => {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0xd800 || code > 0xdfff) continue
    const next = text.charCodeAt(i + 1)
    if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return true
    i++
  }
  return false
}

export const CONTROL_CHARACTER_MESSAGE = "must not contain control characters"

export const tooLongMessage = (max: number) => `is too long (maximum is ${max} characters)`

/** Code points, not UTF-16 units, as JSON Schema's `maxLength` counts them. */
const characters = (text: string) => {
  let count = 0
  for (const _ of text) count++
  return count
}

/** Whether `text` fits `field`'s limit: a quick check on UTF-16 length first, which can only overcount. */
export const fitsLimit = (field: LimitedField, text: string) =>
  text.length <= FIELD_LIMITS[field] || characters(text) <= FIELD_LIMITS[field]

/** What is wrong with `text` as a value of `field` (too long, or holding a control character), if anything. */
export const textProblem = (field: LimitedField, text: string): string | undefined =>
  !fitsLimit(field, text)
    ? tooLongMessage(FIELD_LIMITS[field])
    : hasControlCharacter(text)
      ? CONTROL_CHARACTER_MESSAGE
      : undefined

const withinLimit = (field: LimitedField) =>
  Schema.makeFilter(
    (text: string) => (fitsLimit(field, text) ? undefined : tooLongMessage(FIELD_LIMITS[field])),
    {
      toJsonSchema: () => ({ maxLength: FIELD_LIMITS[field] }),
    },
  )

const withoutControlCharacters = Schema.makeFilter(
  (text: string) => (hasControlCharacter(text) ? CONTROL_CHARACTER_MESSAGE : undefined),
  { toJsonSchema: () => ({ pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*$" }) },
)

/**
 * A text field of the contract: at most its limit, no control characters, and not blank unless `blankAllowed`.
 * Each failure is its own message, so a batch item reports exactly what is wrong with each field.
 */
export const limitedText = (field: LimitedField, options: { readonly blankAllowed?: boolean } = {}) =>
  options.blankAllowed
    ? Schema.String.check(withinLimit(field), withoutControlCharacters)
    : Schema.String.check(
        Schema.isMinLength(1, { message: "can't be blank" }),
        withinLimit(field),
        withoutControlCharacters,
      )

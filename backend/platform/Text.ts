import { Schema } from "effect"

/**
 * Whether `text` holds a C0 control (U+0000-U+001F, newlines included), DEL or a C1 control (U+0080-U+009F, which
 * some terminals read as escape sequences). No text field means one, and Postgres cannot store U+0000.
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

/**
 * Unicode's Default_Ignorable_Code_Point: what renders as nothing (zero-width spaces and joiners, the word joiner
 * and invisible operators, the BOM, soft hyphen, variation selectors, tags) and the bidirectional marks,
 * embeddings, overrides and isolates (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069). In an identifier
 * any of them makes a lookalike of another.
 */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u

/** Whether `text` holds a character that shows as nothing or reorders the text around it (`INVISIBLE`). */
export const hasInvisibleCharacter = (text: string) => INVISIBLE.test(text)

export const INVISIBLE_CHARACTER_MESSAGE = "must not contain zero-width or bidirectional control characters"

export const CONTROL_CHARACTER_MESSAGE = "must not contain control characters"

export const tooLongMessage = (max: number) => `is too long (maximum is ${max} characters)`

/** Code points, not UTF-16 units, as JSON Schema's `maxLength` counts them. */
const characters = (text: string) => {
  let count = 0
  for (const _ of text) count++
  return count
}

/** Whether `text` is at most `max` characters: a quick check on UTF-16 length first, which can only overcount. */
export const fitsLength = (max: number, text: string) => text.length <= max || characters(text) <= max

/** What is wrong with `text` as a field of at most `max` characters (too long, or a control character), if anything. */
export const lengthProblem = (max: number, text: string): string | undefined =>
  !fitsLength(max, text)
    ? tooLongMessage(max)
    : hasControlCharacter(text)
      ? CONTROL_CHARACTER_MESSAGE
      : undefined

const withinLength = (max: number) =>
  Schema.makeFilter((text: string) => (fitsLength(max, text) ? undefined : tooLongMessage(max)), {
    toJsonSchema: () => ({ maxLength: max }),
  })

const withoutControlCharacters = Schema.makeFilter(
  (text: string) => (hasControlCharacter(text) ? CONTROL_CHARACTER_MESSAGE : undefined),
  { toJsonSchema: () => ({ pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*$" }) },
)

/**
 * A text field of at most `max` characters, no control characters, and not blank unless `blankAllowed`. Each
 * failure is its own message, so a batch item reports exactly what is wrong with each field.
 */
export const boundedText = (max: number, options: { readonly blankAllowed?: boolean } = {}) =>
  options.blankAllowed
    ? Schema.String.check(withinLength(max), withoutControlCharacters)
    : Schema.String.check(
        Schema.isMinLength(1, { message: "can't be blank" }),
        withinLength(max),
        withoutControlCharacters,
      )

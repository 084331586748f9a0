import { type Directional, directionals } from "./usps/Directionals.ts"
import { type SecondaryUnit, secondaryUnits } from "./usps/SecondaryUnits.ts"
import { states } from "./usps/States.ts"
import { type StreetSuffix, streetSuffixes } from "./usps/StreetSuffixes.ts"

/**
 * Street lines as USPS Publication 28 reads them: house number, predirectional, name, suffix, postdirectional, then
 * secondary unit designators. A small token-based reader over the Pub 28 tables, because the popular parsers misread
 * building designators, Spanish and French names, or keep "W" and "West" apart.
 */

/** A Pub 28 Appendix C2 abbreviation, or `#` (section 213) when the partner wrote no designator word. */
export type UnitDesignator = SecondaryUnit["abbreviation"] | "#"

/** The unit designator a street line carries; only Pub 28 designators are recognized, so `standard` is always true. */
export interface UnitDesignation {
  readonly designator: UnitDesignator
  readonly value: string | undefined
  readonly standard: true
}

/** A street line read for matching (`key`), for showing on policies (`display`), and for naming its unit. */
export interface StreetLine {
  /** Uppercase Pub 28 form without unit designators: the comparison key for building matching. */
  readonly key: string
  /** The street in title case, suffix and directionals spelled out, house number as written. */
  readonly display: string
  /** The unit designator that names the unit (the last one with a value), never the building's. */
  readonly unit: UnitDesignation | undefined
  /** The value of a building designator ("Bldg 3"): it belongs in `building_name`, not in the street or unit name. */
  readonly building: string | undefined
}

interface Token {
  /** As written, without periods and without punctuation around it. */
  readonly raw: string
  /** Uppercase without accents or punctuation, except the `-` and `/` a house number or unit value needs. */
  readonly word: string
  /** Where the token starts in the line, to return the partner's own text. */
  readonly start: number
}

type Designator =
  SecondaryUnit | { readonly name: "#"; readonly abbreviation: "#"; readonly requiresRange: true }

interface Designation {
  readonly designator: Designator
  readonly word: Token
  readonly value: Token | undefined
}

interface Street {
  readonly house: ReadonlyArray<Token>
  readonly pre: Directional | undefined
  readonly name: ReadonlyArray<Token>
  readonly suffix: StreetSuffix | undefined
  readonly post: Directional | undefined
}

const byWord = <A>(rows: ReadonlyArray<A>, words: (row: A) => ReadonlyArray<string>) =>
  new Map(rows.flatMap((row) => words(row).map((word) => [word, row] as const)))

// MDW is listed under both MEADOW and MEADOWS: a word goes to the row whose primary name it is, then to the row whose
// standard abbreviation it is, then to the first row listing it.
const suffixRank = (word: string, row: StreetSuffix) =>
  word === row.primary ? 0 : word === row.standard ? 1 : 2
const suffixByWord = new Map<string, StreetSuffix>()
for (const row of streetSuffixes) {
  for (const word of [row.primary, row.standard, ...row.abbreviations]) {
    const known = suffixByWord.get(word)
    if (known === undefined || suffixRank(word, row) < suffixRank(word, known)) suffixByWord.set(word, row)
  }
}
const directionalByWord = byWord(directionals, (d) => [d.name, d.abbreviation])
const unitByWord = byWord(secondaryUnits, (u) => [u.name, u.abbreviation])
const hash: Designator = { name: "#", abbreviation: "#", requiresRange: true }
const stateByName = new Map(
  states.flatMap((s) => [s.code, s.name, ...(s.aliases ?? [])].map((n) => [n, s.code])),
)

const isSuffix = (token: Token | undefined) => token !== undefined && suffixByWord.has(token.word)
const isDirectional = (token: Token | undefined) => token !== undefined && directionalByWord.has(token.word)
const designatorOf = (token: Token | undefined): Designator | undefined =>
  token === undefined ? undefined : token.word === "#" ? hash : unitByWord.get(token.word)

/** A token of plain ASCII letters and digits, most of any line: nothing to strip, accents or punctuation. */
const PLAIN = /^[A-Za-z0-9]+$/

// A period between a word and a digit separates them ("Apt.4B"); replacing it keeps every offset in place.
const tokenize = (line: string): Array<Token> =>
  [...line.replace(/(?<=\p{L})\.(?=\d)/gu, " ").matchAll(/#|[^\s,;#]+/g)].flatMap((match) => {
    if (match[0] === "#") return [{ raw: "#", word: "#", start: match.index }]
    if (PLAIN.test(match[0])) return [{ raw: match[0], word: match[0].toUpperCase(), start: match.index }]
    const raw = match[0].replace(/(?<!\d)\.|\.(?!\d)/g, "").replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, "")
    const plain = raw.normalize("NFD").replace(/\p{M}/gu, "").toUpperCase()
    const word = /\d/.test(plain)
      ? plain.replace(/[^\p{L}\p{N}/-]/gu, "")
      : plain.replace(/[^\p{L}\p{N}]/gu, "")
    return word === "" ? [] : [{ raw, word, start: match.index }]
  })

/** The house number, with a fraction after it ("123 1/2"), counts as one part of the line. */
const houseLength = (tokens: ReadonlyArray<Token>) =>
  tokens[0] === undefined || !/^\d/.test(tokens[0].word)
    ? 0
    : /^\d+\/\d+$/.test(tokens[1]?.word ?? "")
      ? 2
      : 1

/** The token after a designator is its value when the designator needs one, or when it looks like one ("PH 2"). */
const valueAt = (tokens: ReadonlyArray<Token>, at: number, designator: Designator): number | undefined => {
  const index = designator !== hash && tokens[at]?.word === "#" ? at + 1 : at
  const candidate = tokens[index]
  if (candidate === undefined || designatorOf(candidate) !== undefined) return undefined
  return designator.requiresRange || /\d/.test(candidate.word) || candidate.word.length === 1
    ? index
    : undefined
}

/**
 * Whether a designator begins at `at`. Only after a street-name token ("Pier Ave", "Lot Rd" are names), not before a
 * suffix ("Ocean Front Walk"), and not without the value it requires (then "Harbor Key" keeps KEY as its suffix).
 */
const startsDesignation = (tokens: ReadonlyArray<Token>, at: number) => {
  const designator = designatorOf(tokens[at])
  if (designator === undefined) return false
  if (designator === hash) return true
  if (isSuffix(tokens[at + 1])) return false
  return !designator.requiresRange || valueAt(tokens, at + 1, designator) !== undefined
}

/** Splits a line where its first unit designator starts: what follows it is unit text, not street. */
const splitLine = (tokens: ReadonlyArray<Token>) => {
  for (let at = houseLength(tokens) + 1; at < tokens.length; at++) {
    if (startsDesignation(tokens, at)) return { street: tokens.slice(0, at), unit: tokens.slice(at) }
  }
  return { street: tokens, unit: [] }
}

/**
 * Reads designators and their values from the start of unit text. Words that are not designators are skipped, or
 * end the reading when `stopAtOther` (then the caller keeps the rest verbatim).
 */
const readDesignations = (tokens: ReadonlyArray<Token>, stopAtOther: boolean) => {
  const designations: Array<Designation> = []
  let at = 0
  while (at < tokens.length) {
    const word = tokens[at]!
    const designator = designatorOf(word)
    const valueIndex = designator === undefined ? undefined : valueAt(tokens, at + 1, designator)
    if (designator === undefined || (designator.requiresRange && valueIndex === undefined)) {
      // A bare "#" or a designator missing its value is noise inside unit text, and ends nothing.
      if (designator === undefined && stopAtOther) break
      at++
      continue
    }
    designations.push({ designator, word, value: valueIndex === undefined ? undefined : tokens[valueIndex] })
    at = (valueIndex ?? at) + 1
  }
  return { designations, rest: at }
}

/** The unit's designator: the last with a value ("Fl 3 Rm 12" is room 12), else the last standing alone. */
const unitDesignation = (designations: ReadonlyArray<Designation>) => {
  const units = designations.filter((d) => d.designator.abbreviation !== "BLDG")
  return units.findLast((d) => d.value !== undefined) ?? units.at(-1)
}

/** Standard designator words are dropped; a designator standing alone keeps its word ("Penthouse"). */
const labelOf = (designation: Designation | undefined) => designation?.value?.raw ?? designation?.word.raw

const classifyStreet = (tokens: ReadonlyArray<Token>): Street => {
  const house = tokens.slice(0, houseLength(tokens))
  let rest = tokens.slice(house.length)
  // A directional is the name itself when nothing but a suffix or another directional would be left ("West St").
  const leavesName = (name: ReadonlyArray<Token>) =>
    name.length >= 2 || (name.length === 1 && !isSuffix(name[0]) && !isDirectional(name[0]))
  let post: Directional | undefined
  if (isDirectional(rest.at(-1)) && leavesName(rest.slice(0, -1))) {
    post = directionalByWord.get(rest.at(-1)!.word)
    rest = rest.slice(0, -1)
  }
  let pre: Directional | undefined
  if (isDirectional(rest[0]) && leavesName(rest.slice(1))) {
    pre = directionalByWord.get(rest[0]!.word)
    rest = rest.slice(1)
  }
  // Only the last suffix word is the suffix (section 234.2), and never the first or only name token.
  let suffix: StreetSuffix | undefined
  if (rest.length >= 2 && isSuffix(rest.at(-1))) {
    suffix = suffixByWord.get(rest.at(-1)!.word)
    rest = rest.slice(0, -1)
  }
  return { house, pre, name: rest, suffix, post }
}

const keyOf = (street: Street) =>
  [
    ...street.house.map((t) => t.word),
    street.pre?.abbreviation,
    ...street.name.map((t) => t.word),
    street.suffix?.standard,
    street.post?.abbreviation,
  ]
    .filter((word) => word !== undefined)
    .join(" ")

const lowercaseInNames = new Set(["OF", "THE", "DE", "LA", "DEL", "DU", "DES", "AND"])

const capitalize = (word: string) =>
  word
    .toLowerCase()
    .replace(/(^|-)(\p{L})/gu, (_, before: string, letter: string) => before + letter.toUpperCase())
    .replace(
      /^(\p{L})(['’])(\p{L})/u,
      (_, o: string, mark: string, letter: string) => o + mark + letter.toUpperCase(),
    )

/** Title case keeps ordinals lowercase ("21st"), other tokens with digits uppercase ("12A"), particles lowercase. */
const titleCase = (token: Token, first: boolean) =>
  /\d/.test(token.raw)
    ? /^\d+(st|nd|rd|th)$/i.test(token.raw)
      ? token.raw.toLowerCase()
      : token.raw.toUpperCase()
    : !first && lowercaseInNames.has(token.word)
      ? token.raw.toLowerCase()
      : capitalize(token.raw)

const displayOf = (street: Street) =>
  [
    ...street.house.map((t) => t.raw),
    street.pre && capitalize(street.pre.name),
    ...street.name.map((t, i) => titleCase(t, i === 0)),
    street.suffix && capitalize(street.suffix.primary),
    street.post && capitalize(street.post.name),
  ]
    .filter((part) => part !== undefined)
    .join(" ")

/** Suffix and directional words compare by their abbreviation wherever they stand ("Court" and "Ct", "North" and "N"). */
const looseWord = (token: Token) =>
  suffixByWord.get(token.word)?.standard ?? directionalByWord.get(token.word)?.abbreviation ?? token.word

/** Reads a street line for building matching and display: designators stripped, suffix and directionals canonical. */
export const normalizeStreetLine = (line: string): StreetLine => {
  const { street, unit } = splitLine(tokenize(line))
  const { designations } = readDesignations(unit, false)
  const classified = classifyStreet(street)
  const found = unitDesignation(designations)
  return {
    key: keyOf(classified),
    display: displayOf(classified),
    unit: found && { designator: found.designator.abbreviation, value: found.value?.raw, standard: true },
    building: designations.find((d) => d.designator.abbreviation === "BLDG")?.value?.raw,
  }
}

/** A state's two-letter code from its code or its Appendix B name, in any case; undefined when it is neither. */
export const normalizeState = (input: string): string | undefined =>
  stateByName.get(
    input
      .toUpperCase()
      .replace(/\./g, "")
      .replace(/[^A-Z]+/g, " ")
      .trim(),
  )

/**
 * The five-digit ZIP of a ZIP or ZIP+4. A number has lost its leading zeros to a spreadsheet (2134 is 02134, and
 * 21341234 is 02134-1234); a string must be written out in full.
 */
export const normalizeZip = (input: string | number): string | undefined => {
  if (typeof input === "number") {
    if (!Number.isInteger(input) || input < 1 || input > 999_999_999) return undefined
    const digits = String(input)
    // Six digits cannot be a ZIP+4 that lost zeros: no ZIP starts with 000.
    return digits.length <= 5
      ? digits.padStart(5, "0")
      : digits.length >= 7
        ? digits.padStart(9, "0").slice(0, 5)
        : undefined
  }
  return /^(\d{5})(?:[- ]?\d{4})?$/.exec(input.trim())?.[1]
}

/**
 * The building street: the part its units' cleaned street lines share, in display form. When the lines differ past
 * it, the shared part is cut back to the end of its street suffix, so a nonstandard label they share ("Loft 1",
 * "Loft 2") stays out; it is undefined when the lines part inside a street ("Oak Hill Ct", "Oak Ridge Ct") or share
 * no street name. The most common spelling is shown, ties broken alphabetically, so the order of units does not matter.
 */
export const deriveBuildingStreet = (lines: ReadonlyArray<string>): string | undefined => {
  const streets = lines.map((line) => splitLine(tokenize(line)).street).filter((street) => street.length > 0)
  const first = streets[0]
  if (first === undefined) return undefined
  const loose = streets.map((street) => street.map(looseWord))
  let shared = 0
  while (loose.every((words) => shared < words.length && words[shared] === loose[0]![shared])) shared++
  let length = shared
  if (streets.some((street) => street.length !== shared)) {
    for (let end = shared; end > 0; end--) {
      const street = classifyStreet(first.slice(0, end))
      if (street.suffix !== undefined || street.post !== undefined) {
        length = end
        break
      }
    }
    if (streets.some((street) => street.slice(length).some(isSuffix))) return undefined
  }
  const prefix = first.slice(0, length)
  if (!prefix.slice(houseLength(prefix)).some((t) => !isDirectional(t))) return undefined
  // Lines spelled alike share one display: each spelling is classified once.
  const spellings = new Map<string, { readonly street: ReadonlyArray<Token>; count: number }>()
  for (const street of streets) {
    const shared = street.slice(0, length)
    const spelling = shared.map((t) => t.raw).join(" ")
    const seen = spellings.get(spelling)
    if (seen === undefined) spellings.set(spelling, { street: shared, count: 1 })
    else seen.count++
  }
  const counts = new Map<string, number>()
  for (const { street, count } of spellings.values()) {
    const display = displayOf(classifyStreet(street))
    counts.set(display, (counts.get(display) ?? 0) + count)
  }
  return [...counts].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : a > b ? 1 : 0))[0]![0]
}

/**
 * The unit label from unit text such as a `line_two` ("4B", "Apt 4B", "#4B", "Loft 3"): a standard designator gives
 * its value, a building designator gives nothing, and text that does not start with a designator is kept verbatim.
 */
const labelFromUnitText = (text: string): string | undefined => {
  const tokens = tokenize(text)
  const { designations, rest } = readDesignations(tokens, true)
  const unit = unitDesignation(designations)
  if (unit !== undefined) return labelOf(unit)
  const verbatim = rest < tokens.length ? text.slice(tokens[rest]!.start).trim() : ""
  return verbatim === "" ? undefined : verbatim
}

/** The unit label a designator in a unit's street line gives ("Apt 4B" -> "4B"); undefined when it has none. */
export const unitLabelFromLine = (line: string): string | undefined => {
  const { unit } = splitLine(tokenize(line))
  return labelOf(unitDesignation(readDesignations(unit, false).designations))
}

/**
 * What a unit's street line holds past the building's established street, as the partner wrote it ("Loft 3");
 * standard designator words in it are dropped as everywhere else. Undefined when the line does not start with the
 * building street or nothing is left.
 */
export const remainderAfterStreet = (line: string, buildingStreet: string): string | undefined => {
  const tokens = tokenize(line)
  const building = tokenize(buildingStreet).map(looseWord)
  if (building.length === 0 || tokens.length <= building.length) return undefined
  if (building.some((word, i) => looseWord(tokens[i]!) !== word)) return undefined
  return labelFromUnitText(line.slice(tokens[building.length]!.start))
}

/** The unit label in an address's `line_two`: a designator's value, or the line verbatim when it is nonstandard. */
export const unitLabelFromLineTwo = (lineTwo: string): string | undefined => labelFromUnitText(lineTwo)

import streetTypes from "street-types"

/** One row of Publication 28 Appendix C1: the primary name, the spellings seen in the wild, the standard abbreviation. */
export interface StreetSuffix {
  readonly primary: string
  readonly abbreviations: ReadonlyArray<string>
  readonly standard: string
}

/**
 * Appendix C1 as the street-types package ships it. A few of its values carry stray whitespace ("ARCADE ",
 * "XING    "), and some rows leave the primary name out of the spellings (PLACE, HEIGHTS), so both are repaired here.
 */
export const streetSuffixes: ReadonlyArray<StreetSuffix> = streetTypes.map((row) => {
  const primary = row.suffix.trim()
  const abbreviations = row.abbrs.map((a) => a.trim())
  return {
    primary,
    abbreviations: abbreviations.includes(primary) ? abbreviations : [primary, ...abbreviations],
    standard: row.standardAbbr.trim(),
  }
})

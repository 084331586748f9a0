/**
 * Publication 28 Appendix C2: secondary unit designators. `requiresRange` marks those that need a value after them
 * ("APT 4B"); the others may stand alone ("PH", "REAR"). KEY and TRLR are street suffixes in Appendix C1 as well.
 */
export const secondaryUnits = [
  { name: "APARTMENT", abbreviation: "APT", requiresRange: true },
  { name: "BASEMENT", abbreviation: "BSMT", requiresRange: false },
  { name: "BUILDING", abbreviation: "BLDG", requiresRange: true },
  { name: "DEPARTMENT", abbreviation: "DEPT", requiresRange: true },
  { name: "FLOOR", abbreviation: "FL", requiresRange: true },
  { name: "FRONT", abbreviation: "FRNT", requiresRange: false },
  { name: "HANGAR", abbreviation: "HNGR", requiresRange: true },
  { name: "KEY", abbreviation: "KEY", requiresRange: true },
  { name: "LOBBY", abbreviation: "LBBY", requiresRange: false },
  { name: "LOT", abbreviation: "LOT", requiresRange: true },
  { name: "LOWER", abbreviation: "LOWR", requiresRange: false },
  { name: "OFFICE", abbreviation: "OFC", requiresRange: false },
  { name: "PENTHOUSE", abbreviation: "PH", requiresRange: false },
  { name: "PIER", abbreviation: "PIER", requiresRange: true },
  { name: "REAR", abbreviation: "REAR", requiresRange: false },
  { name: "ROOM", abbreviation: "RM", requiresRange: true },
  { name: "SIDE", abbreviation: "SIDE", requiresRange: false },
  { name: "SLIP", abbreviation: "SLIP", requiresRange: true },
  { name: "SPACE", abbreviation: "SPC", requiresRange: true },
  { name: "STOP", abbreviation: "STOP", requiresRange: true },
  { name: "SUITE", abbreviation: "STE", requiresRange: true },
  { name: "TRAILER", abbreviation: "TRLR", requiresRange: true },
  { name: "UNIT", abbreviation: "UNIT", requiresRange: true },
  { name: "UPPER", abbreviation: "UPPR", requiresRange: false },
] as const

export type SecondaryUnit = (typeof secondaryUnits)[number]

/** Publication 28 section 233: the eight directionals and the words they abbreviate. */
export const directionals = [
  { name: "NORTH", abbreviation: "N" },
  { name: "SOUTH", abbreviation: "S" },
  { name: "EAST", abbreviation: "E" },
  { name: "WEST", abbreviation: "W" },
  { name: "NORTHEAST", abbreviation: "NE" },
  { name: "NORTHWEST", abbreviation: "NW" },
  { name: "SOUTHEAST", abbreviation: "SE" },
  { name: "SOUTHWEST", abbreviation: "SW" },
] as const

export type Directional = (typeof directionals)[number]

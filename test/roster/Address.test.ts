import { describe, expect, it } from "vitest"
import {
  deriveBuildingStreet,
  normalizeState,
  normalizeStreetLine,
  normalizeZip,
  remainderAfterStreet,
  type UnitDesignation,
  unitLabelFromLine,
  unitLabelFromLineTwo,
} from "../../backend/roster/Address.ts"

const unit = (designator: UnitDesignation["designator"], value?: string): UnitDesignation => ({
  designator,
  value,
  standard: true,
})

interface StreetCase {
  readonly name: string
  readonly line: string
  readonly key: string
  readonly display: string
  readonly unit?: UnitDesignation
  readonly building?: string
}

const streets: ReadonlyArray<StreetCase> = [
  { name: "Street spelled out", line: "123 Main Street", key: "123 MAIN ST", display: "123 Main Street" },
  { name: "St", line: "123 Main St", key: "123 MAIN ST", display: "123 Main Street" },
  { name: "Str", line: "123 Main Str", key: "123 MAIN ST", display: "123 Main Street" },
  { name: "STREET in capitals", line: "123 MAIN STREET", key: "123 MAIN ST", display: "123 Main Street" },
  { name: "St. with a period", line: "123 Main St.", key: "123 MAIN ST", display: "123 Main Street" },
  { name: "lowercase line", line: "123 main st", key: "123 MAIN ST", display: "123 Main Street" },
  { name: "Avenue", line: "5 Madison Avenue", key: "5 MADISON AVE", display: "5 Madison Avenue" },
  { name: "Ave", line: "5 Madison Ave", key: "5 MADISON AVE", display: "5 Madison Avenue" },
  { name: "Av", line: "5 Madison Av", key: "5 MADISON AVE", display: "5 Madison Avenue" },
  { name: "Avenu", line: "5 Madison Avenu", key: "5 MADISON AVE", display: "5 Madison Avenue" },
  { name: "Boulevard", line: "9 Sunset Boulevard", key: "9 SUNSET BLVD", display: "9 Sunset Boulevard" },
  { name: "Blvd", line: "9 Sunset Blvd", key: "9 SUNSET BLVD", display: "9 Sunset Boulevard" },
  { name: "Court", line: "12 Oak Court", key: "12 OAK CT", display: "12 Oak Court" },
  { name: "Ct", line: "12 Oak Ct", key: "12 OAK CT", display: "12 Oak Court" },
  { name: "Drive", line: "7 Elm Drive", key: "7 ELM DR", display: "7 Elm Drive" },
  { name: "Dr", line: "7 Elm Dr", key: "7 ELM DR", display: "7 Elm Drive" },
  { name: "Lane", line: "3 Cherry Lane", key: "3 CHERRY LN", display: "3 Cherry Lane" },
  { name: "Ln", line: "3 Cherry Ln", key: "3 CHERRY LN", display: "3 Cherry Lane" },
  { name: "Road", line: "44 Mill Road", key: "44 MILL RD", display: "44 Mill Road" },
  { name: "Rd", line: "44 Mill Rd", key: "44 MILL RD", display: "44 Mill Road" },
  {
    name: "Place (not among its own C1 spellings)",
    line: "8 Quincy Place",
    key: "8 QUINCY PL",
    display: "8 Quincy Place",
  },
  { name: "Pl", line: "8 Quincy Pl", key: "8 QUINCY PL", display: "8 Quincy Place" },
  { name: "Parkway", line: "100 Ocean Parkway", key: "100 OCEAN PKWY", display: "100 Ocean Parkway" },
  { name: "Pkwy", line: "100 Ocean Pkwy", key: "100 OCEAN PKWY", display: "100 Ocean Parkway" },
  { name: "Terrace", line: "2 Hill Terrace", key: "2 HILL TER", display: "2 Hill Terrace" },
  { name: "Ter", line: "2 Hill Ter", key: "2 HILL TER", display: "2 Hill Terrace" },
  { name: "Circle", line: "6 Maple Circle", key: "6 MAPLE CIR", display: "6 Maple Circle" },
  { name: "Cir", line: "6 Maple Cir", key: "6 MAPLE CIR", display: "6 Maple Circle" },
  { name: "Highway", line: "400 Coastal Highway", key: "400 COASTAL HWY", display: "400 Coastal Highway" },
  { name: "Hwy", line: "400 Coastal Hwy", key: "400 COASTAL HWY", display: "400 Coastal Highway" },
  {
    name: "Annex shown with Pub 28's ANEX",
    line: "10 Depot Annex",
    key: "10 DEPOT ANX",
    display: "10 Depot Anex",
  },
  { name: "Anx", line: "10 Depot Anx", key: "10 DEPOT ANX", display: "10 Depot Anex" },
  {
    name: "MDW is Meadow's own abbreviation",
    line: "15 Green Mdw",
    key: "15 GREEN MDW",
    display: "15 Green Meadow",
  },
  { name: "Meadows", line: "15 Green Meadows", key: "15 GREEN MDWS", display: "15 Green Meadows" },
  {
    name: "two suffix words: only the last is the suffix",
    line: "1 Park Avenue Ext",
    key: "1 PARK AVENUE EXT",
    display: "1 Park Avenue Extension",
  },
  {
    name: "spelled-out predirectional with an apartment",
    line: "123 North Main Street Apt 4",
    key: "123 N MAIN ST",
    display: "123 North Main Street",
    unit: unit("APT", "4"),
  },
  {
    name: "n. predirectional",
    line: "123 n. Main St",
    key: "123 N MAIN ST",
    display: "123 North Main Street",
  },
  {
    name: "NE before a one-word name",
    line: "88 NE Broadway",
    key: "88 NE BROADWAY",
    display: "88 Northeast Broadway",
  },
  {
    name: "Northeast before an ordinal",
    line: "88 Northeast 2nd Ave",
    key: "88 NE 2ND AVE",
    display: "88 Northeast 2nd Avenue",
  },
  {
    name: "postdirectional NW",
    line: "500 Main St NW",
    key: "500 MAIN ST NW",
    display: "500 Main Street Northwest",
  },
  {
    name: "N as a street name",
    line: "1200 N St NW",
    key: "1200 N ST NW",
    display: "1200 N Street Northwest",
  },
  { name: "West as the name", line: "40 West St", key: "40 WEST ST", display: "40 West Street" },
  {
    name: "W as a predirectional",
    line: "40 W Main St",
    key: "40 W MAIN ST",
    display: "40 West Main Street",
  },
  { name: "N after Avenue is the name", line: "15 Avenue N", key: "15 AVENUE N", display: "15 Avenue N" },
  {
    name: "#4B",
    line: "123 Main St #4B",
    key: "123 MAIN ST",
    display: "123 Main Street",
    unit: unit("#", "4B"),
  },
  {
    name: "# 4B",
    line: "123 Main St # 4B",
    key: "123 MAIN ST",
    display: "123 Main Street",
    unit: unit("#", "4B"),
  },
  {
    name: "Apt 4B",
    line: "123 Main St Apt 4B",
    key: "123 MAIN ST",
    display: "123 Main Street",
    unit: unit("APT", "4B"),
  },
  {
    name: "APT. 4B",
    line: "123 Main St APT. 4B",
    key: "123 MAIN ST",
    display: "123 Main Street",
    unit: unit("APT", "4B"),
  },
  {
    name: "Apartment after a comma",
    line: "123 Main St, Apartment 4B",
    key: "123 MAIN ST",
    display: "123 Main Street",
    unit: unit("APT", "4B"),
  },
  {
    name: "Apt.4B",
    line: "12 Oak St. Apt.4B",
    key: "12 OAK ST",
    display: "12 Oak Street",
    unit: unit("APT", "4B"),
  },
  {
    name: "Trlr is a unit after a street, Trailer a name before a suffix",
    line: "12 Trailer Park Dr Trlr 9",
    key: "12 TRAILER PARK DR",
    display: "12 Trailer Park Drive",
    unit: unit("TRLR", "9"),
  },
  {
    name: "Apt #4B",
    line: "123 Main St Apt #4B",
    key: "123 MAIN ST",
    display: "123 Main Street",
    unit: unit("APT", "4B"),
  },
  {
    name: "Suite 200",
    line: "200 Market St Suite 200",
    key: "200 MARKET ST",
    display: "200 Market Street",
    unit: unit("STE", "200"),
  },
  {
    name: "Ste 200",
    line: "200 Market St Ste 200",
    key: "200 MARKET ST",
    display: "200 Market Street",
    unit: unit("STE", "200"),
  },
  {
    name: "Unit C",
    line: "9 Oak Ct Unit C",
    key: "9 OAK CT",
    display: "9 Oak Court",
    unit: unit("UNIT", "C"),
  },
  {
    name: "Bldg 3 Apt 201: the apartment is the unit, the building is kept apart",
    line: "9 Oak Ct Bldg 3 Apt 201",
    key: "9 OAK CT",
    display: "9 Oak Court",
    unit: unit("APT", "201"),
    building: "3",
  },
  {
    name: "Penthouse alone",
    line: "1 River Rd Penthouse",
    key: "1 RIVER RD",
    display: "1 River Road",
    unit: unit("PH"),
  },
  {
    name: "PH 2",
    line: "1 River Rd PH 2",
    key: "1 RIVER RD",
    display: "1 River Road",
    unit: unit("PH", "2"),
  },
  {
    name: "Fl 3",
    line: "70 Pine St Fl 3",
    key: "70 PINE ST",
    display: "70 Pine Street",
    unit: unit("FL", "3"),
  },
  {
    name: "Rm 12",
    line: "70 Pine St Rm 12",
    key: "70 PINE ST",
    display: "70 Pine Street",
    unit: unit("RM", "12"),
  },
  {
    name: "Spc 7",
    line: "5 Palm Dr Spc 7",
    key: "5 PALM DR",
    display: "5 Palm Drive",
    unit: unit("SPC", "7"),
  },
  {
    name: "Lot 5 after a street",
    line: "5 Palm Dr Lot 5",
    key: "5 PALM DR",
    display: "5 Palm Drive",
    unit: unit("LOT", "5"),
  },
  { name: "Pier as a name", line: "39 Pier Ave", key: "39 PIER AVE", display: "39 Pier Avenue" },
  { name: "Front as a name", line: "10 Front St", key: "10 FRONT ST", display: "10 Front Street" },
  { name: "Lot as a name", line: "10 Lot Rd", key: "10 LOT RD", display: "10 Lot Road" },
  { name: "Unit as a name", line: "10 Unit Rd", key: "10 UNIT RD", display: "10 Unit Road" },
  {
    name: "a designator word before a suffix",
    line: "8 Ocean Front Walk Unit 5",
    key: "8 OCEAN FRONT WALK",
    display: "8 Ocean Front Walk",
    unit: unit("UNIT", "5"),
  },
  {
    name: "Key without a value is the suffix",
    line: "3 Harbor Key",
    key: "3 HARBOR KY",
    display: "3 Harbor Key",
  },
  {
    name: "Avenue as the first name token",
    line: "1 Avenue of the Americas",
    key: "1 AVENUE OF THE AMERICAS",
    display: "1 Avenue of the Americas",
  },
  {
    name: "Court as the first name token",
    line: "15 Court St",
    key: "15 COURT ST",
    display: "15 Court Street",
  },
  { name: "Park Ave", line: "10 Park Ave", key: "10 PARK AVE", display: "10 Park Avenue" },
  {
    name: "Rue de la Paix",
    line: "12 Rue de la Paix",
    key: "12 RUE DE LA PAIX",
    display: "12 Rue de la Paix",
  },
  {
    name: "Camino del Mar",
    line: "77 CAMINO DEL MAR",
    key: "77 CAMINO DEL MAR",
    display: "77 Camino del Mar",
  },
  { name: "5th Ave", line: "10 5th Ave", key: "10 5TH AVE", display: "10 5th Avenue" },
  { name: "21ST STREET", line: "300 W 21ST STREET", key: "300 W 21ST ST", display: "300 West 21st Street" },
  {
    name: "house number with a letter",
    line: "123-B Main St",
    key: "123-B MAIN ST",
    display: "123-B Main Street",
  },
  {
    name: "house number with a fraction",
    line: "123 1/2 Main St",
    key: "123 1/2 MAIN ST",
    display: "123 1/2 Main Street",
  },
  {
    name: "apostrophe in a name",
    line: "77 O'FARRELL ST",
    key: "77 OFARRELL ST",
    display: "77 O'Farrell Street",
  },
  {
    name: "accents compare plainly",
    line: "4 Calle Peñasco",
    key: "4 CALLE PENASCO",
    display: "4 Calle Peñasco",
  },
]

describe("normalizeStreetLine", () => {
  it.each(streets)("$name: $line", ({ line, key, display, unit, building }) => {
    expect(normalizeStreetLine(line)).toEqual({ key, display, unit, building })
  })

  it.each(streets)("reads its own display back to the same key: $line", ({ line }) => {
    const { key, display } = normalizeStreetLine(line)
    expect(normalizeStreetLine(display)).toMatchObject({ key, display })
  })

  const sameBuilding: ReadonlyArray<readonly [string, string, string]> = [
    ["an apartment designator and a spelled-out suffix", "123 N Main St Apt 4", "123 North Main Street"],
    ["# and COURT", "12 Oak Ct #2", "12 OAK COURT"],
    ["a suite and a spelled-out postdirectional", "500 Main Street Northwest Suite 200", "500 Main St NW"],
    ["building and apartment designators", "9 Oak Ct Bldg 3 Apt 201", "9 Oak Court"],
    ["a standalone penthouse", "1 River Rd Penthouse", "1 River Road"],
    ["NE and Northeast", "88 NE Broadway", "88 Northeast Broadway"],
  ]
  it.each(sameBuilding)("gives the same key for %s", (_, a, b) => {
    expect(normalizeStreetLine(a).key).toBe(normalizeStreetLine(b).key)
  })

  const otherBuilding: ReadonlyArray<readonly [string, string, string]> = [
    ["West Street and W Street", "40 West St", "40 W St"],
    ["an avenue and its extension", "10 Park Ave", "10 Park Ave Ext"],
    ["different house numbers", "12 Oak Ct Apt 1", "14 Oak Ct Apt 1"],
    ["a nonstandard label, which is not guessed", "12 Oak Ct Loft 3", "12 Oak Ct"],
  ]
  it.each(otherBuilding)("keeps apart %s", (_, a, b) => {
    expect(normalizeStreetLine(a).key).not.toBe(normalizeStreetLine(b).key)
  })
})

describe("normalizeState", () => {
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ["ca", "CA"],
    ["California", "CA"],
    ["CALIFORNIA", "CA"],
    [" new york ", "NY"],
    ["District of Columbia", "DC"],
    ["D.C.", "DC"],
    ["Puerto Rico", "PR"],
    ["pr", "PR"],
    ["U.S. Virgin Islands", "VI"],
    ["Guam", "GU"],
    ["AE", "AE"],
    ["Armed Forces Europe", "AE"],
    ["Armed Forces Middle East", "AE"],
    ["Armed Forces Americas (except Canada)", "AA"],
    ["ap", "AP"],
    ["XX", undefined],
    ["Calif", undefined],
    ["", undefined],
  ]
  it.each(cases)("reads %j as %s", (input, code) => {
    expect(normalizeState(input)).toBe(code)
  })
})

describe("normalizeZip", () => {
  const cases: ReadonlyArray<readonly [string | number, string | undefined]> = [
    ["02134", "02134"],
    ["02134-1234", "02134"],
    ["02134 1234", "02134"],
    ["021341234", "02134"],
    [" 90210 ", "90210"],
    [2134, "02134"],
    [501, "00501"],
    [90210, "90210"],
    [21341234, "02134"],
    [902101234, "90210"],
    ["2134", undefined],
    ["ABCDE", undefined],
    ["021345", undefined],
    ["02134-12", undefined],
    [2134.5, undefined],
    [-2134, undefined],
    [123456, undefined],
  ]
  it.each(cases)("reads %j as %s", (input, zip) => {
    expect(normalizeZip(input)).toBe(zip)
  })
})

describe("deriveBuildingStreet", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly lines: ReadonlyArray<string>
    readonly street?: string
  }> = [
    {
      name: "units that disagree on the suffix spelling",
      lines: ["12 Oak Ct Apt 1", "12 OAK COURT #2", "12 Oak Ct. Unit 3"],
      street: "12 Oak Court",
    },
    {
      name: "units that disagree on the postdirectional spelling",
      lines: ["500 Main St NW Ste 100", "500 Main Street Northwest Suite 200"],
      street: "500 Main Street Northwest",
    },
    { name: "one unit", lines: ["7 Elm Dr"], street: "7 Elm Drive" },
    {
      name: "units in a numbered building",
      lines: ["9 Oak Ct Bldg 3 Apt 201", "9 Oak Ct Bldg 3 Apt 202"],
      street: "9 Oak Court",
    },
    {
      name: "a shared nonstandard label word",
      lines: ["12 Oak Ct Loft 1", "12 Oak Ct Loft 2"],
      street: "12 Oak Court",
    },
    {
      name: "bare trailing unit labels",
      lines: ["123 Main St 4B", "123 Main St 5C"],
      street: "123 Main Street",
    },
    {
      name: "a street without a suffix",
      lines: ["100 Broadway 4A", "100 Broadway 5B"],
      street: "100 Broadway",
    },
    {
      name: "a name starting with a suffix word",
      lines: ["1 Avenue of the Americas Fl 3", "1 Avenue of the Americas Fl 4"],
      street: "1 Avenue of the Americas",
    },
    { name: "nothing shared", lines: ["12 Oak Ct Apt 1", "14 Elm St Apt 2"] },
    { name: "a house number alone", lines: ["12 Oak Ct Apt 1", "12 Elm St Apt 2"] },
    { name: "streets parting inside the name", lines: ["12 Oak Hill Ct", "12 Oak Ridge Ct"] },
    { name: "a street and its extension", lines: ["12 Oak Ct", "12 Oak Ct Ext"] },
    { name: "no lines", lines: [] },
    { name: "blank lines", lines: ["  ", ""] },
  ]
  it.each(cases)("$name", ({ lines, street }) => {
    expect(deriveBuildingStreet(lines)).toBe(street)
  })

  it("does not depend on the order of the units", () => {
    const lines = ["12 Oak Ct Apt 1", "12 Oak Ct Apt 2", "12 Oak Ct Apt 3"]
    expect(deriveBuildingStreet([...lines].reverse())).toBe(deriveBuildingStreet(lines))
  })
})

describe("unit name derivation", () => {
  const fromLine: ReadonlyArray<readonly [string, string | undefined]> = [
    ["123 Main St Apt 4B", "4B"],
    ["123 Main St #4B", "4B"],
    ["123 Main St # 4B", "4B"],
    ["9 Oak Ct Bldg 3 Apt 201", "201"],
    ["9 Oak Ct Bldg 3", undefined],
    ["1 River Rd Penthouse", "Penthouse"],
    ["1 River Rd PH 2", "2"],
    ["70 Pine St Fl 3 Rm 12", "12"],
    ["123 Main St", undefined],
    ["39 Pier Ave", undefined],
    ["12 Oak Ct Loft 3", undefined],
    ["123 Main St #", undefined],
  ]
  it.each(fromLine)("unitLabelFromLine(%j) is %j", (line, label) => {
    expect(unitLabelFromLine(line)).toBe(label)
  })

  const remainders: ReadonlyArray<readonly [string, string, string | undefined]> = [
    ["12 Oak Ct Loft 3", "12 Oak Court", "Loft 3"],
    ["123 N Main St 4B", "123 North Main Street", "4B"],
    ["12 Oak Ct, Unit 3", "12 Oak Court", "3"],
    ["12 Oak Ct Bldg 2 Loft 3", "12 Oak Court", "Loft 3"],
    ["12 Oak Ct Bldg 2", "12 Oak Court", undefined],
    ["12 Oak Ct", "12 Oak Court", undefined],
    ["12 Oak Ct #", "12 Oak Court", undefined],
    ["14 Oak Ct Loft 3", "12 Oak Court", undefined],
  ]
  it.each(remainders)("remainderAfterStreet(%j, %j) is %j", (line, street, label) => {
    expect(remainderAfterStreet(line, street)).toBe(label)
  })

  const fromLineTwo: ReadonlyArray<readonly [string, string | undefined]> = [
    ["4B", "4B"],
    ["Apt 4B", "4B"],
    ["  apt. 12 ", "12"],
    ["#4B", "4B"],
    ["# 4B", "4B"],
    ["Unit C", "C"],
    ["Suite 200", "200"],
    ["Loft 3", "Loft 3"],
    ["Penthouse", "Penthouse"],
    ["Bldg 3 Apt 201", "201"],
    ["Bldg 3", undefined],
    ["Apt", undefined],
    ["", undefined],
  ]
  it.each(fromLineTwo)("unitLabelFromLineTwo(%j) is %j", (lineTwo, label) => {
    expect(unitLabelFromLineTwo(lineTwo)).toBe(label)
  })
})

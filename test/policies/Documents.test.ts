import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { unzlibSync } from "fflate"
import { certificatePdf, declarationPdf, type DocumentFacts } from "../../backend/policies/Documents.ts"

const FACTS: DocumentFacts = {
  policyNumber: "SDI-2026-000041",
  productType: "security_deposit_insurance",
  productVersion: null,
  cadence: "monthly",
  premiumCents: 1000,
  payments: 12,
  coverageAmountCents: 200000,
  coverageStartDate: "2026-02-01",
  coverageEndDate: "2027-01-31",
  renterName: "John Doe",
  address: "1 Main St, Springfield, IL 62701",
  unitName: "4B",
  policyHolderName: "Acme Apartments LLC",
  issuedAt: new Date("2026-11-26T10:00:00Z"),
  insurerName: "Acme Mutual",
  supportEmail: "help@acme.example",
  supportPhone: "+1 555 010 0100",
}

/** The text a PDF draws: each page's content stream inflated, its hex strings decoded (pdf-lib's WinAnsi). */
const textOf = (pdf: Uint8Array) => {
  const raw = Buffer.from(pdf).toString("latin1")
  const lines: Array<string> = []
  for (const match of raw.matchAll(/\/FlateDecode[^]*?stream\r?\n([^]*?)\r?\nendstream/g)) {
    const content = Buffer.from(unzlibSync(Buffer.from(match[1]!, "latin1"))).toString("latin1")
    for (const shown of content.matchAll(/<([0-9A-Fa-f]*)> Tj/g)) {
      lines.push(Buffer.from(shown[1]!, "hex").toString("latin1"))
    }
  }
  return lines.join("\n")
}

describe("the policy documents", () => {
  it.effect(
    "read like documents a person keeps: human dates, the insurer, a contact, no internal fields",
    () =>
      Effect.gen(function* () {
        for (const make of [declarationPdf, certificatePdf]) {
          const text = textOf(yield* Effect.promise(() => make(FACTS)))
          assert.include(text, "February 1, 2026 to January 31, 2027")
          assert.include(text, "Issued on November 26, 2026")
          assert.include(text, "Acme Mutual")
          assert.include(text, "help@acme.example or +1 555 010 0100")
          for (const internal of ["2026-02-01", "generation", "Status", "upcoming", "active"]) {
            assert.notInclude(text, internal)
          }
        }
      }),
  )

  it.effect("word a cash deposit as a refundable deposit, not insurance", () =>
    Effect.gen(function* () {
      const text = textOf(
        yield* Effect.promise(() =>
          declarationPdf({
            ...FACTS,
            productType: "service_deposit",
            cadence: "upfront",
            premiumCents: 250000,
          }),
        ),
      )
      assert.include(text, "Cash security deposit")
      assert.include(text, "A refundable deposit, not insurance")
      assert.notInclude(text, "Acme Mutual")
      assert.notInclude(text, "Premium")
    }),
  )
})

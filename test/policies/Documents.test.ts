import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { unzlibSync } from "fflate"
import { PDFDict, PDFDocument, PDFName } from "pdf-lib"
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
  paidOn: "2026-11-25",
  insurerName: "Acme Mutual",
  insurerAddress: "500 Insurer Way, Hartford, CT 06103",
  insurerLicenseNumber: "CT-9876543",
  depositHolderName: "Acme Deposit Services, LLC",
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
      assert.include(text, "Cash deposit receipt")
      assert.include(text, "Held by\nAcme Deposit Services, LLC")
      assert.include(text, "Deposit reference")
      assert.include(text, "Paid on\nNovember 25, 2026")
      assert.notInclude(text, "Policy number")
      assert.notInclude(text, "Acme Mutual")
      assert.notInclude(text, "Premium")
    }),
  )

  it.effect(
    "name the insurer's address and licence, the premium on the certificate, the payment date and how to cancel",
    () =>
      Effect.gen(function* () {
        for (const make of [declarationPdf, certificatePdf]) {
          const text = textOf(yield* Effect.promise(() => make(FACTS)))
          assert.include(text, "Insurer's address\n500 Insurer Way, Hartford, CT 06103")
          assert.include(text, "Insurer's licence number\nCT-9876543")
          assert.include(text, "Premium: $10.00 a month, 12 payments")
          assert.include(text, "Paid on\nNovember 25, 2026")
        }
        const declaration = textOf(yield* Effect.promise(() => declarationPdf(FACTS)))
        assert.match(declaration.replace(/\n/g, " "), /To cancel, email help@acme\.example/)
        assert.match(declaration.replace(/\n/g, " "), /premiums already paid are not refunded/)
      }),
  )

  it.effect("are tagged PDFs: a structure tree, marked content, a language and the title shown", () =>
    Effect.gen(function* () {
      for (const make of [declarationPdf, certificatePdf]) {
        const bytes = yield* Effect.promise(() => make(FACTS))
        // A reader opens it, and finds the tree from its catalog.
        const parsed = yield* Effect.promise(() => PDFDocument.load(bytes))
        const root = parsed.catalog.lookup(PDFName.of("StructTreeRoot"), PDFDict)
        assert.strictEqual(String(root.get(PDFName.of("Type"))), "/StructTreeRoot")
        const raw = Buffer.from(bytes).toString("latin1")
        assert.match(raw, /\/StructTreeRoot \d+ 0 R/)
        assert.match(raw, /\/MarkInfo <<\s*\/Marked true\s*>>/)
        assert.match(raw, /\/Lang \(en-US\)/)
        assert.match(raw, /\/Type \/StructTreeRoot/)
        assert.match(raw, /\/ParentTree/)
        assert.match(raw, /\/S \/Document/)
        assert.match(raw, /\/S \/H1/)
        assert.match(raw, /\/StructParents 0/)
        assert.match(raw, /\/DisplayDocTitle true/)
        // Every text run drawn is marked content with its MCID.
        const contents: Array<string> = []
        for (const match of raw.matchAll(/\/FlateDecode[^]*?stream\r?\n([^]*?)\r?\nendstream/g)) {
          contents.push(Buffer.from(unzlibSync(Buffer.from(match[1]!, "latin1"))).toString("latin1"))
        }
        const content = contents.join("\n")
        const shown = [...content.matchAll(/ Tj/g)].length
        assert.isAbove(shown, 5)
        assert.strictEqual([...content.matchAll(/\/(H1|P) <<\s*\/MCID \d+\s*>> BDC/g)].length, shown)
        assert.strictEqual([...content.matchAll(/\bEMC\b/g)].length, shown)
      }
    }),
  )
})

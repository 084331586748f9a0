import type { PDFFont } from "pdf-lib"

/** The PDF and zip libraries, loaded on first use: only the document actor needs them, not every process. */
const libraries = async () => {
  const [pdf, zip] = await Promise.all([import("pdf-lib"), import("fflate")])
  return { ...pdf, zipSync: zip.zipSync }
}

/** What a policy's documents state; amounts in cents, dates `YYYY-MM-DD`. */
export interface DocumentFacts {
  readonly policyNumber: string
  readonly productType: string
  readonly productVersion: string | null
  readonly status: string
  readonly cadence: string
  readonly premiumCents: number
  readonly payments: number
  readonly coverageAmountCents: number
  readonly coverageStartDate: string
  readonly coverageEndDate: string
  readonly renterName: string
  readonly address: string
  readonly unitName: string
  /** The landlord's legal entity: the property's policy holder name. */
  readonly policyHolderName: string
  /** Which generation of the archive this is (1 at issue, then one more per revision). */
  readonly generation: number
  /** When this generation was made; also the PDFs' creation date. */
  readonly issuedAt: Date
}

const PRODUCT_NAMES: Readonly<Record<string, string>> = {
  security_deposit_insurance: "Security deposit insurance",
  renter_guarantee_insurance: "Renter guarantee insurance",
  service_deposit: "Cash security deposit",
}

const dollars = (cents: number) =>
  `$${(cents / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`

const premiumLine = (facts: DocumentFacts) =>
  facts.productType === "service_deposit"
    ? `Deposit paid: ${dollars(facts.premiumCents)}`
    : facts.cadence === "monthly"
      ? `Premium: ${dollars(facts.premiumCents)} a month, ${facts.payments} payments`
      : `Premium: ${dollars(facts.premiumCents)}, paid in full`

/** One page of text: a title, then label-value lines, then a closing note. */
const page = async (
  facts: DocumentFacts,
  title: string,
  lines: ReadonlyArray<readonly [string, string]>,
  note: string,
) => {
  const { PDFDocument, StandardFonts, rgb } = await libraries()
  const pdf = await PDFDocument.create()
  pdf.setTitle(`${title} ${facts.policyNumber}`)
  pdf.setSubject(PRODUCT_NAMES[facts.productType] ?? facts.productType)
  pdf.setCreator("partner-service")
  pdf.setProducer("partner-service")
  // Fixed dates: the same policy generation always makes the same bytes.
  pdf.setCreationDate(facts.issuedAt)
  pdf.setModificationDate(facts.issuedAt)
  const regular = await pdf.embedFont(StandardFonts.Helvetica)
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold)
  const sheet = pdf.addPage([612, 792])
  let y = 720
  const write = (text: string, font: PDFFont, size: number, x = 56) => {
    sheet.drawText(text, { x, y, size, font, color: rgb(0.1, 0.1, 0.1) })
    y -= size * 1.8
  }
  write(title, bold, 20)
  write(PRODUCT_NAMES[facts.productType] ?? facts.productType, regular, 12)
  y -= 12
  for (const [label, value] of lines) {
    sheet.drawText(label, { x: 56, y, size: 10, font: bold })
    sheet.drawText(value, { x: 220, y, size: 10, font: regular })
    y -= 20
  }
  y -= 16
  write(note, regular, 9)
  return pdf.save({ useObjectStreams: false })
}

/** The policy declaration: the renter's contract, every term of the coverage. */
export const declarationPdf = (facts: DocumentFacts) =>
  page(
    facts,
    "Policy declaration",
    [
      ["Policy number", facts.policyNumber],
      ...(facts.productVersion === null ? [] : [["Product version", facts.productVersion] as const]),
      ["Status", facts.status],
      ["Insured renter", facts.renterName],
      ["Premises", `${facts.address}, unit ${facts.unitName}`],
      ["Landlord (beneficiary)", facts.policyHolderName],
      ["Coverage amount", dollars(facts.coverageAmountCents)],
      ["Coverage period", `${facts.coverageStartDate} to ${facts.coverageEndDate}`],
      ["Payment", premiumLine(facts)],
      ["Document generation", String(facts.generation)],
    ],
    "This declaration and the policy terms form the contract. A revision replaces this document.",
  )

/** The certificate of coverage: what the landlord keeps to show the deposit is covered. */
export const certificatePdf = (facts: DocumentFacts) =>
  page(
    facts,
    "Certificate of coverage",
    [
      ["Certificate for", facts.policyHolderName],
      ["Policy number", facts.policyNumber],
      ["Renter", facts.renterName],
      ["Premises", `${facts.address}, unit ${facts.unitName}`],
      ["Coverage amount", dollars(facts.coverageAmountCents)],
      ["Coverage period", `${facts.coverageStartDate} to ${facts.coverageEndDate}`],
    ],
    "This certificate states coverage on the date it was issued; the policy declaration governs.",
  )

/** The archive a `policy_url` serves: the declaration and the certificate, as PDFs in one zip. */
export const documentArchive = async (facts: DocumentFacts) => {
  const { zipSync } = await libraries()
  const [declaration, certificate] = await Promise.all([declarationPdf(facts), certificatePdf(facts)])
  const mtime = facts.issuedAt
  return zipSync(
    {
      [`policy-declaration-${facts.policyNumber}.pdf`]: [declaration, { mtime }],
      [`certificate-of-coverage-${facts.policyNumber}.pdf`]: [certificate, { mtime }],
    },
    { level: 6 },
  )
}

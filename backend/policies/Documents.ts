import type { PDFFont } from "pdf-lib"
import { documentFileNames } from "./Domain.ts"

/** The PDF and zip libraries, loaded on first use: only the document actor needs them, not every process. */
const libraries = async () => {
  const [pdf, zip] = await Promise.all([import("pdf-lib"), import("fflate")])
  return { ...pdf, zipSync: zip.zipSync, unzipSync: zip.unzipSync }
}

/** What a policy's documents state; amounts in cents, dates `YYYY-MM-DD`. */
export interface DocumentFacts {
  readonly policyNumber: string
  readonly productType: string
  readonly productVersion: string | null
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
  /** When this generation was made; also the PDFs' creation date. */
  readonly issuedAt: Date
  /** Who issues the insurance, and where the renter writes with questions. */
  readonly insurerName: string
  readonly supportEmail: string
  readonly supportPhone: string | undefined
}

const PRODUCT_NAMES: Readonly<Record<string, string>> = {
  security_deposit_insurance: "Security deposit insurance",
  renter_guarantee_insurance: "Renter guarantee insurance",
  service_deposit: "Cash security deposit",
}

const dollars = (cents: number) =>
  `$${(cents / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`

const dateFormat = new Intl.DateTimeFormat("en-US", { dateStyle: "long", timeZone: "UTC" })

/** `2026-11-26` (or an instant) as a person writes it: November 26, 2026. */
const humanDate = (date: string | Date) =>
  dateFormat.format(typeof date === "string" ? new Date(`${date}T00:00:00Z`) : date)

const period = (facts: DocumentFacts) =>
  `${humanDate(facts.coverageStartDate)} to ${humanDate(facts.coverageEndDate)}`

/** Who to ask, on every document: the support address, and the phone when there is one. */
const contactLine = (facts: DocumentFacts) =>
  `Questions: ${facts.supportEmail}${facts.supportPhone === undefined ? "" : ` or ${facts.supportPhone}`}.`

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
  for (const line of [note, `Issued on ${humanDate(facts.issuedAt)}. ${contactLine(facts)}`]) {
    write(line, regular, 9)
  }
  return pdf.save({ useObjectStreams: false })
}

/** The policy declaration: the renter's contract, every term of the coverage. */
export const declarationPdf = (facts: DocumentFacts) =>
  page(
    facts,
    "Policy declaration",
    facts.productType === "service_deposit"
      ? [
          ["Reference", facts.policyNumber],
          ["Renter", facts.renterName],
          ["Home", `${facts.address}, unit ${facts.unitName}`],
          ["Landlord", facts.policyHolderName],
          ["Deposit held", dollars(facts.coverageAmountCents)],
          ["Lease", period(facts)],
          ["Payment", premiumLine(facts)],
        ]
      : [
          ["Policy number", facts.policyNumber],
          ["Issued by", facts.insurerName],
          ...(facts.productVersion === null
            ? []
            : [["Policy terms", `Version ${facts.productVersion}`] as const]),
          ["Insured renter", facts.renterName],
          ["Home", `${facts.address}, unit ${facts.unitName}`],
          ["Landlord (beneficiary)", facts.policyHolderName],
          ["Coverage amount", dollars(facts.coverageAmountCents)],
          ["Coverage period", period(facts)],
          ["Payment", premiumLine(facts)],
        ],
    facts.productType === "service_deposit"
      ? "A refundable deposit, not insurance: returned when the lease ends, less what the landlord claims."
      : "The insurer pays the landlord's claims up to the coverage amount; the renter repays the insurer.",
  )

/** The certificate of coverage: what the landlord keeps to show the deposit is covered. */
export const certificatePdf = (facts: DocumentFacts) =>
  page(
    facts,
    "Certificate of coverage",
    [
      ["Certificate for", facts.policyHolderName],
      [facts.productType === "service_deposit" ? "Reference" : "Policy number", facts.policyNumber],
      ...(facts.productType === "service_deposit" ? [] : [["Issued by", facts.insurerName] as const]),
      ["Renter", facts.renterName],
      ["Home", `${facts.address}, unit ${facts.unitName}`],
      [
        facts.productType === "service_deposit" ? "Deposit held" : "Coverage amount",
        dollars(facts.coverageAmountCents),
      ],
      [facts.productType === "service_deposit" ? "Lease" : "Coverage period", period(facts)],
    ],
    "This certificate states coverage on the date it was issued; the policy declaration governs.",
  )

/** The archive a `policy_url` serves: the declaration and the certificate, as PDFs in one zip. */
export const documentArchive = async (facts: DocumentFacts) => {
  const { zipSync } = await libraries()
  const [declaration, certificate] = await Promise.all([declarationPdf(facts), certificatePdf(facts)])
  const mtime = facts.issuedAt
  const names = documentFileNames(facts.policyNumber)
  return zipSync(
    {
      [names.declaration]: [declaration, { mtime }],
      [names.certificate]: [certificate, { mtime }],
    },
    { level: 6 },
  )
}

/** One file of an archive, by its name inside it; undefined when the archive holds no such file. */
export const archiveEntry = async (archive: Uint8Array, name: string) => {
  const { unzipSync } = await libraries()
  return unzipSync(archive, { filter: (file) => file.name === name })[name]
}

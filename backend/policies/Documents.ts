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
  /** The day the renter paid (the policy's `issued_on`, `YYYY-MM-DD`). */
  readonly paidOn: string
  /** Who issues the insurance (its address and licence), who holds a cash deposit, where renters write. */
  readonly insurerName: string
  readonly insurerAddress: string
  readonly insurerLicenseNumber: string
  readonly depositHolderName: string
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

const isDeposit = (facts: DocumentFacts) => facts.productType === "service_deposit"

/** How to cancel and what is refunded, as the product's terms say it (`backend/enrollment/Terms.ts`). */
const cancellingNote = (facts: DocumentFacts) =>
  isDeposit(facts)
    ? `To cancel, email ${facts.supportEmail} with this reference. The deposit is returned when the lease ends ` +
      "or the deposit is canceled, less what the landlord claims under the lease."
    : `To cancel, email ${facts.supportEmail} with this policy number. Nothing more is charged once the policy ` +
      "is canceled; premiums already paid are not refunded."

/** Who issues the insurance, with its address and licence, on every insurance document. */
const insurerLines = (facts: DocumentFacts): ReadonlyArray<readonly [string, string]> => [
  ["Issued by", facts.insurerName],
  ["Insurer's address", facts.insurerAddress],
  ["Insurer's licence number", facts.insurerLicenseNumber],
]

/** One block of the page, in reading order: its structure type and its text runs (a label and a value, or one). */
interface Block {
  readonly role: "H1" | "P"
  readonly runs: ReadonlyArray<{ readonly text: string; readonly bold?: boolean; readonly x?: number }>
  readonly size: number
}

/** `text` cut into lines no wider than `width` points at `size` in `font`. */
const wrap = (text: string, font: PDFFont, size: number, width: number) => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(" ")) {
    const next = line === "" ? word : `${line} ${word}`
    if (line !== "" && font.widthOfTextAtSize(next, size) > width) {
      lines.push(line)
      line = word
    } else line = next
  }
  if (line !== "") lines.push(line)
  return lines
}

/**
 * One page of text, a tagged PDF: a title, then label-value lines, then closing notes. Every text run is marked
 * content (`BDC` with its MCID) of a structure element (`H1` for the title, `P` for each line and note) under one
 * `Document` element, with the structure tree, its parent tree, `/MarkInfo`, `/Lang` and the title shown as
 * the window's, so a screen reader reads it in order.
 */
const page = async (
  facts: DocumentFacts,
  title: string,
  lines: ReadonlyArray<readonly [string, string]>,
  notes: ReadonlyArray<string>,
) => {
  const { PDFDocument, PDFName, PDFNumber, PDFOperator, PDFOperatorNames, PDFString, StandardFonts, rgb } =
    await libraries()
  const pdf = await PDFDocument.create()
  const productName = PRODUCT_NAMES[facts.productType] ?? facts.productType
  pdf.setTitle(`${title} ${facts.policyNumber}`, { showInWindowTitleBar: true })
  pdf.setSubject(productName)
  pdf.setLanguage("en-US")
  pdf.setCreator("partner-service")
  pdf.setProducer("partner-service")
  // Fixed dates: the same policy generation always makes the same bytes.
  pdf.setCreationDate(facts.issuedAt)
  pdf.setModificationDate(facts.issuedAt)
  const regular = await pdf.embedFont(StandardFonts.Helvetica)
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold)
  const sheet = pdf.addPage([612, 792])
  const context = pdf.context

  const blocks: Array<Block> = [
    { role: "H1", runs: [{ text: title, bold: true }], size: 20 },
    { role: "P", runs: [{ text: productName }], size: 12 },
    ...lines.map(([label, value]): Block => ({
      role: "P",
      runs: [
        { text: label, bold: true },
        { text: value, x: 220 },
      ],
      size: 10,
    })),
    ...[...notes, `Issued on ${humanDate(facts.issuedAt)}. ${contactLine(facts)}`].flatMap((note) =>
      wrap(note, regular, 9, 500).map((text): Block => ({ role: "P", runs: [{ text }], size: 9 })),
    ),
  ]

  const documentElement = context.nextRef()
  const structTreeRoot = context.nextRef()
  const elements: Array<ReturnType<typeof context.nextRef>> = []
  const marked: Array<ReturnType<typeof context.nextRef>> = []
  let mcid = 0
  let y = 720
  for (const [index, block] of blocks.entries()) {
    if (index === 2 || index === 2 + lines.length) y -= 12
    const mcids: Array<number> = []
    const element = context.nextRef()
    for (const run of block.runs) {
      sheet.pushOperators(
        PDFOperator.of(PDFOperatorNames.BeginMarkedContentSequence, [
          PDFName.of(block.role),
          // A property list is a dictionary, which pdf-lib's operator type does not name but writes as it is.
          context.obj({ MCID: mcid }) as never,
        ]),
      )
      sheet.drawText(run.text, {
        x: run.x ?? 56,
        y,
        size: block.size,
        font: run.bold === true ? bold : regular,
        color: rgb(0.1, 0.1, 0.1),
      })
      sheet.pushOperators(PDFOperator.of(PDFOperatorNames.EndMarkedContent))
      mcids.push(mcid)
      marked.push(element)
      mcid += 1
    }
    context.assign(
      element,
      context.obj({
        Type: "StructElem",
        S: block.role,
        P: documentElement,
        Pg: sheet.ref,
        K: mcids.length === 1 ? PDFNumber.of(mcids[0]!) : mcids,
      }),
    )
    elements.push(element)
    y -= block.role === "H1" ? block.size * 1.8 : block.runs.length > 1 ? 20 : block.size * 1.8
  }
  context.assign(
    documentElement,
    context.obj({ Type: "StructElem", S: "Document", P: structTreeRoot, K: elements }),
  )
  context.assign(
    structTreeRoot,
    context.obj({
      Type: "StructTreeRoot",
      K: documentElement,
      ParentTree: context.obj({ Nums: [0, marked] }),
      ParentTreeNextKey: 1,
    }),
  )
  sheet.node.set(PDFName.of("StructParents"), PDFNumber.of(0))
  sheet.node.set(PDFName.of("Tabs"), PDFName.of("S"))
  pdf.catalog.set(PDFName.of("StructTreeRoot"), structTreeRoot)
  pdf.catalog.set(PDFName.of("MarkInfo"), context.obj({ Marked: true }))
  pdf.catalog.set(PDFName.of("Lang"), PDFString.of("en-US"))
  return pdf.save({ useObjectStreams: false })
}

/** The policy declaration: the renter's contract, every term of the coverage (a cash deposit's receipt). */
export const declarationPdf = (facts: DocumentFacts) =>
  page(
    facts,
    isDeposit(facts) ? "Cash deposit receipt" : "Policy declaration",
    isDeposit(facts)
      ? [
          ["Deposit reference", facts.policyNumber],
          ["What was bought", "A refundable cash deposit (not insurance)"],
          ["Held by", facts.depositHolderName],
          ["Renter", facts.renterName],
          ["Home", `${facts.address}, unit ${facts.unitName}`],
          ["Landlord", facts.policyHolderName],
          ["Deposit held", dollars(facts.coverageAmountCents)],
          ["Lease", period(facts)],
          ["Payment", premiumLine(facts)],
          ["Paid on", humanDate(facts.paidOn)],
        ]
      : [
          ["Policy number", facts.policyNumber],
          ["What was bought", `${PRODUCT_NAMES[facts.productType] ?? facts.productType} (insurance)`],
          ...insurerLines(facts),
          ...(facts.productVersion === null
            ? []
            : [["Policy terms", `Version ${facts.productVersion}`] as const]),
          ["Insured renter", facts.renterName],
          ["Home", `${facts.address}, unit ${facts.unitName}`],
          ["Landlord (beneficiary)", facts.policyHolderName],
          ["Coverage amount", dollars(facts.coverageAmountCents)],
          ["Coverage period", period(facts)],
          ["Payment", premiumLine(facts)],
          ["Paid on", humanDate(facts.paidOn)],
        ],
    [
      isDeposit(facts)
        ? `A refundable deposit, not insurance: ${facts.depositHolderName} holds it and returns it when the lease ends, less what the landlord claims.`
        : "The insurer pays the landlord's claims up to the coverage amount; the renter repays the insurer.",
      cancellingNote(facts),
    ],
  )

/** The certificate of coverage: what the landlord keeps to show the deposit is covered (or held). */
export const certificatePdf = (facts: DocumentFacts) =>
  page(
    facts,
    isDeposit(facts) ? "Certificate of deposit held" : "Certificate of coverage",
    [
      ["Certificate for", facts.policyHolderName],
      [isDeposit(facts) ? "Deposit reference" : "Policy number", facts.policyNumber],
      ...(isDeposit(facts) ? [["Held by", facts.depositHolderName] as const] : insurerLines(facts)),
      ["Renter", facts.renterName],
      ["Home", `${facts.address}, unit ${facts.unitName}`],
      [isDeposit(facts) ? "Deposit held" : "Coverage amount", dollars(facts.coverageAmountCents)],
      [isDeposit(facts) ? "Lease" : "Coverage period", period(facts)],
      ["Payment", premiumLine(facts)],
      ["Paid on", humanDate(facts.paidOn)],
    ],
    ["This certificate states coverage on the date it was issued; the policy declaration governs."],
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

import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { ObjectStore } from "../platform/ObjectStore.ts"
import { Outbox } from "../platform/Outbox.ts"
import { Enrollments } from "../prospects/Enrollments.ts"
import { DOCUMENTS_BUCKET, IssuerConfig } from "./Config.ts"
import type { PolicyRow } from "./Domain.ts"
import { archiveEntry, documentArchive } from "./Documents.ts"
import { documentsRequested, documentsUpdated, type DocumentsRequested } from "./Events.ts"
import { PoliciesRepo } from "./Repo.ts"
import { TestClocks } from "./TestClocks.ts"

/** An archive's object name: 32 random bytes, so its link cannot be guessed; the link is not access-controlled. */
export const ARCHIVE_NAME = /^[A-Za-z0-9_-]{43}\.zip$/
const newArchiveName = () => `${randomBytes(32).toString("base64url")}.zip`

/**
 * A policy's documents: each generation of its archive asked for, made by the document actor, and served by its
 * unguessable link.
 */
export const makePolicyDocuments = Effect.gen(function* () {
  const db = yield* Db
  const repo = yield* PoliciesRepo
  const outbox = yield* Outbox
  const enrollments = yield* Enrollments
  const objects = yield* ObjectStore
  const config = yield* AppConfig
  const issuer = yield* IssuerConfig
  const clocks = yield* TestClocks

  const policyUrl = (objectName: string) =>
    `${config.enrollmentHost.replace(/\/+$/, "")}/documents/${objectName}`

  /**
   * Asks for a new generation of the policy's archive under a new unguessable name; the document actor makes it
   * and announces it (`policy.documents_updated`). Earlier archives stay as they are. In the caller's transaction.
   */
  const requestDocuments = Effect.fn("Policies.requestDocuments")(function* (policy: PolicyRow) {
    yield* repo.lockPolicy(policy.id)
    const generation = yield* repo.requestDocuments(policy.id, newArchiveName())
    yield* outbox.enqueue([documentsRequested(policy.owner_slug, policy.id, generation)])
    return generation
  })
  /**
   * The document actor's work for one request: the archive (declaration and certificate) is made and stored under
   * the name chosen when it was requested, unless already there; then, once, the generation is marked stored,
   * `policy.documents_updated` announces its link and the prospect's `latest_coverage` points to it. A repeated
   * request finds the generation stored and does nothing.
   */
  const generateDocuments = Effect.fn("Policies.generateDocuments")(function* (request: DocumentsRequested) {
    const docs = yield* repo.documents(request.policy_id, request.generation)
    if (docs === undefined) return "unknown" as const
    if (docs.status === "stored") return "duplicate" as const
    const policy = (yield* repo.findPolicy(request.policy_id))!
    // On the owner's clock, as the policy was issued: a test clock's policy states the date it lives on.
    const issuedAt = yield* clocks.nowOf(policy.owner_id)
    const archive = yield* Effect.promise(() =>
      documentArchive({
        policyNumber: policy.policy_number,
        productType: policy.product_type,
        productVersion: policy.product_version,
        cadence: policy.cadence,
        premiumCents: Number(policy.premium_cents),
        payments: policy.payments,
        coverageAmountCents: Number(policy.coverage_amount_cents),
        coverageStartDate: policy.coverage_start_date,
        coverageEndDate: policy.coverage_end_date,
        renterName: policy.insured_name,
        address: policy.premises,
        unitName: policy.unit_name,
        policyHolderName: policy.policy_holder_name,
        issuedAt,
        paidOn: policy.issued_on,
        insurerName: issuer.insurerName,
        insurerAddress: issuer.insurerAddress,
        insurerLicenseNumber: issuer.insurerLicenseNumber,
        depositHolderName: issuer.depositHolderName,
        supportEmail: issuer.supportEmail,
        supportPhone: issuer.supportPhone,
      }),
    )
    yield* objects.putOnce(
      DOCUMENTS_BUCKET,
      docs.object_name,
      archive,
      `${policy.policy_number} documents, generation ${docs.generation}`,
    )
    return yield* db.transaction(
      Effect.gen(function* () {
        yield* repo.lockPolicy(policy.id)
        if (!(yield* repo.markDocumentsStored(policy.id, docs.generation))) return "duplicate" as const
        const current = (yield* repo.findPolicy(policy.id))!
        const url = policyUrl(docs.object_name)
        yield* outbox.enqueue([documentsUpdated(current.owner_slug, current, config.consoleBaseUrl, url)])
        if (current.prospect_id !== null) {
          yield* enrollments.recordLatestCoverage(current.prospect_id, {
            type: current.product_type,
            product_payment_cents: Number(current.premium_cents),
            cadence: current.cadence,
            coverage_start_date: current.coverage_start_date,
            coverage_end_date: current.coverage_end_date,
            coverage_amount_cents: Number(current.coverage_amount_cents),
            document_url: url,
          })
        }
        return "stored" as const
      }),
    )
  })

  /** Operators (and revisions): a new generation of a policy's documents, with a new link. */
  const regenerateDocuments = Effect.fn("Policies.regenerateDocuments")(function* (id: string) {
    return yield* db.transaction(
      Effect.gen(function* () {
        const policy = yield* repo.findPolicy(id)
        if (policy === undefined) return undefined
        return yield* requestDocuments(policy)
      }),
    )
  })

  /** The bytes a documents link serves: only archives that were stored and announced, else undefined. */
  const archive = Effect.fn("Policies.archive")(function* (objectName: string) {
    if (!ARCHIVE_NAME.test(objectName)) return undefined
    if (!(yield* repo.isStoredArchive(objectName))) return undefined
    return yield* objects.get(DOCUMENTS_BUCKET, objectName)
  })

  /** One PDF of a stored archive, by its name inside it (the renter's page links each); else undefined. */
  const documentFile = Effect.fn("Policies.documentFile")(function* (objectName: string, file: string) {
    const bytes = yield* archive(objectName)
    return bytes === undefined ? undefined : yield* Effect.promise(() => archiveEntry(bytes, file))
  })

  /** The newest stored archive's link of a policy, if any. */
  const documentsUrlOf = Effect.fn("Policies.documentsUrlOf")(function* (id: string) {
    const latest = yield* repo.latestDocuments(id)
    return latest === undefined ? undefined : policyUrl(latest.object_name)
  })

  return {
    requestDocuments,
    generateDocuments,
    regenerateDocuments,
    archive,
    documentFile,
    documentsUrlOf,
  }
})

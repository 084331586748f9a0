import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { unzipSync } from "fflate"
import { PDFDocument } from "pdf-lib"
import type { JourneyView } from "../../backend/enrollment/Domain.ts"
import { Policies } from "../../backend/policies/Policies.ts"
import { rowIdOf } from "../../backend/policies/Domain.ts"
import { EventNames, type EventName, isEventName } from "../../backend/events/Catalog.ts"
import { Envelopes } from "../../backend/events/Envelope.ts"
import { gatewayPort, httpRequest } from "../support/Auth.ts"
import { runCli } from "../support/Cli.ts"
import { enrollmentService, linkOf, walkJourney, type Walk } from "../support/Enrollment.ts"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  issueSource,
  postProspect,
  prospectPartner,
  provisionedOwner,
} from "../support/Prospects.ts"
import { compilePublished, responseSchema, assertValid, type Json } from "../support/PublishedApi.ts"
import { type Received, startReceiver } from "../support/Receiver.ts"
import { eventually, readStream } from "../support/Streams.ts"
import { createEndpoint } from "../support/Webhooks.ts"

const service = enrollmentService()

/** The published GET prospect body, with the renter guarantee among the offered products (where enabled). */
const prospectSchema = (() => {
  const schema = responseSchema(
    "/partners/{owner_slug}/prospects/{source}/{source_prospect_id}",
    "get",
    "200",
  )
  const offered = (((schema.properties as Json).prospect as Json).properties as Json).offered_products as Json
  const item = (offered.items as Json).properties as Json
  ;(item.product_type as Json).enum = [
    "security_deposit_insurance",
    "cash_deposit",
    "renter_guarantee_insurance",
  ]
  return compilePublished(schema)
})()

interface Delivered {
  readonly event: EventName
  readonly body: { readonly event: string; readonly property_owner_slug: string; readonly data: Json }
  readonly payload: Json
}

const delivered = (request: Received): Delivered => {
  const body = JSON.parse(request.body.toString("utf8")) as Delivered["body"]
  const payload = Object.values(body.data)[0] as Json
  return { event: body.event as EventName, body, payload }
}

/** What identifies one emission: the event, its record, and (for documents) the archive it announces. */
const emissionKey = (d: Delivered) =>
  `${d.event}|${String(d.payload.id)}|${String(d.payload.policy_url ?? "")}`

const archiveAt = (policyUrl: string) =>
  Effect.gen(function* () {
    const port = yield* gatewayPort("enrollment")
    const response = yield* Effect.promise(() =>
      fetch(`http://127.0.0.1:${port}${new URL(policyUrl).pathname}`),
    )
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      bytes: new Uint8Array(yield* Effect.promise(() => response.arrayBuffer())),
    }
  })

const WALKS: ReadonlyArray<Walk & { readonly id: string; readonly expect: JourneyView["step"] }> = [
  { id: "sdi-upfront", product: "security_deposit_insurance", cadence: "upfront", expect: "completed" },
  { id: "cash-deposit", product: "cash_deposit", expect: "completed" },
  { id: "rg-monthly", product: "renter_guarantee_insurance", cadence: "monthly", expect: "completed" },
  // The partner's screening result turns to denied after the renter answered: deposit insurance is refused, and
  // the renter is back on the choice with the cash deposit.
  { id: "sdi-refused", product: "security_deposit_insurance", cadence: "monthly", expect: "choose" },
]

layer(service.layer, { excludeTestServices: true, timeout: 240_000 })((it) => {
  describe("the enrollment journey's events", () => {
    it.effect(
      "emits each event of every product's journey once per subscribed endpoint, in the spec's shapes",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const partner = yield* prospectPartner()
          yield* issueSource({ code: "journey", clients: [partner.clientId] })
          const slug = yield* provisionedOwner(partner, "journey-org", {
            owner: { guarantor_coverage_capable: true },
          })
          for (const path of ["/a", "/b"]) {
            yield* createEndpoint(partner, `/partners/${slug}/webhooks/endpoints`, {
              name: `all events ${path}`,
              destination_url: receiver.url(path),
              events: EventNames,
            })
          }

          const ids = [...WALKS.map((w) => w.id), "cli-fails-next"]
          for (const id of ids) {
            yield* postProspect(
              partner,
              slug,
              completeProspect("journey", id, {
                email: `${id}@Example.com`,
                guarantor_coverage: id.startsWith("rg"),
              }),
            )
          }
          const ready = new Map<string, Json>()
          for (const id of ids) ready.set(id, yield* awaitProspect(partner, slug, "journey", id))

          // Each product through the Journey service, as the renter's pages call it.
          const finals = new Map<string, JourneyView>()
          for (const walk of WALKS) {
            const link = linkOf(ready.get(walk.id)!.enrollment_url as string)
            const beforeChoosing =
              walk.expect === "completed"
                ? undefined
                : postProspect(
                    partner,
                    slug,
                    completeProspect("journey", walk.id, {
                      email: `${walk.id}@Example.com`,
                      screening_result: "denied",
                    }),
                  ).pipe(
                    Effect.andThen(
                      awaitProspect(
                        partner,
                        slug,
                        "journey",
                        walk.id,
                        (p) => ((p.sdi_ineligibility_reasons as Array<string> | undefined) ?? []).length > 0,
                      ),
                    ),
                  )
            const views = yield* walkJourney(
              { ...link, email: link.email.toUpperCase() },
              { ...walk, ...(beforeChoosing === undefined ? {} : { beforeChoosing }) },
            )
            assert.deepStrictEqual(
              views.map((v) => v.step),
              walk.expect === "completed"
                ? ["details", "underwriting", "choose", "quote", "completed"]
                : ["details", "underwriting", "choose", "choose"],
              walk.id,
            )
            finals.set(walk.id, views.at(-1)!)
          }
          // And once through the CLI helper, which walks the same journey.
          const cli = yield* runCli(
            service.env,
            "enrollment",
            "complete",
            "--source",
            "journey",
            "--id",
            "cli-fails-next",
            "--product",
            "security_deposit_insurance",
            "--cadence",
            "monthly",
            "--card",
            "fails-next-charge",
          )
          assert.strictEqual(cli.code, 0, cli.stderr)
          const printed = JSON.parse(cli.stdout) as { step: string; application: Json; policy: Json }
          assert.strictEqual(printed.step, "completed")
          assert.isTrue(
            Exit.isSuccess(
              Schema.decodeUnknownExit(Envelopes["policy.created"])(
                {
                  event: "policy.created",
                  property_owner_slug: slug,
                  data: { insurance_policy: printed.policy },
                },
                { onExcessProperty: "error" },
              ),
            ),
          )

          // A regeneration of one policy's documents, once its first archive is announced.
          const sdi = finals.get("sdi-upfront")!.policy!
          const firstUrl = yield* eventually(
            Effect.sync(() =>
              receiver
                .received("/a")
                .map(delivered)
                .find((d) => d.event === "policy.documents_updated" && d.payload.id === sdi.id),
            ),
            (d) => d !== undefined,
          ).pipe(Effect.map((d) => d!.payload.policy_url as string))
          const first = yield* archiveAt(firstUrl)
          yield* Policies.use((policies) => policies.regenerateDocuments(rowIdOf("policy_", sdi.id)!))

          // 7 events per completed journey (4 with the CLI's), 5 for the refused one (its prospect is ready again
          // after the partner's change), 1 for the regeneration.
          const expected = 4 * 7 + 5 + 1
          for (const path of ["/a", "/b"]) {
            yield* eventually(
              Effect.sync(() => receiver.received(path).length),
              (n) => n >= expected,
            )
          }
          const perEndpoint = ["/a", "/b"].map((path) => receiver.received(path).map(delivered))
          for (const [i, deliveries] of perEndpoint.entries()) {
            assert.strictEqual(deliveries.length, expected, `endpoint ${i}`)
            const keys = deliveries.map(emissionKey)
            // Only the refused renter's prospect is ready twice: again once the partner changed it.
            assert.deepStrictEqual(
              keys.filter((key, n) => keys.indexOf(key) !== n),
              [`prospect.ready|tpp_${String(ready.get("sdi-refused")!.id)}|`],
              `a repeated emission at endpoint ${i}`,
            )
            for (const d of deliveries) {
              assert.isTrue(isEventName(d.event), d.event)
              assert.strictEqual(d.body.property_owner_slug, slug)
              const decoded = Schema.decodeUnknownExit(Envelopes[d.event])(d.body, {
                onExcessProperty: "error",
              })
              assert.isTrue(Exit.isSuccess(decoded), `${d.event}: ${JSON.stringify(d.body)}`)
              for (const value of Object.values(d.payload))
                assert.isNotNull(value, `${d.event} carries a null`)
            }
          }
          const byEvent = (event: EventName) => perEndpoint[0]!.filter((d) => d.event === event)
          assert.strictEqual(byEvent("policy_application.created").length, 5)
          assert.strictEqual(byEvent("policy_application.quoted").length, 4)
          assert.strictEqual(byEvent("policy_application.declined").length, 1)
          assert.strictEqual(byEvent("policy_application.submitted").length, 4)
          assert.strictEqual(byEvent("policy.created").length, 4)
          assert.strictEqual(byEvent("policy.documents_updated").length, 5)
          assert.deepStrictEqual(
            byEvent("policy.created")
              .map((d) => d.payload.product_type)
              .sort(),
            [
              "renter_guarantee_insurance",
              "security_deposit_insurance",
              "security_deposit_insurance",
              "service_deposit",
            ],
          )
          const rg = byEvent("policy.created").find(
            (d) => d.payload.product_type === "renter_guarantee_insurance",
          )!
          assert.strictEqual(rg.payload.product_version, "2025.12.01")
          for (const d of byEvent("policy.created")) {
            assert.strictEqual(
              d.payload.admin_policy_url,
              `https://console.test/policies/${String(d.payload.id)}`,
            )
            assert.notProperty(d.payload, "policy_url")
          }

          // On EVENTS, each policy's creation comes before any of its documents.
          const stream = yield* readStream("EVENTS")
          for (const created of byEvent("policy.created")) {
            const at = (event: string) =>
              stream
                .map((m, i) => ({ m, i }))
                .filter(
                  ({ m }) =>
                    m.subject.endsWith(event) &&
                    ((m.json as Delivered["body"]).data.insurance_policy as Json).id === created.payload.id,
                )
                .map(({ i }) => i)
            const [createdAt] = at(".policy.created")
            assert.isDefined(createdAt)
            for (const documentsAt of at(".policy.documents_updated")) assert.isBelow(createdAt!, documentsAt)
          }

          // The prospects afterwards: submitted, with the latest coverage and its documents link.
          for (const walk of WALKS) {
            const answer = yield* getProspect(partner, slug, "journey", walk.id)
            assertValid(prospectSchema, answer.body, walk.id)
            const prospect = answer.body.prospect
            assert.strictEqual(prospect.application_submitted, walk.expect === "completed", walk.id)
            assert.isNotEmpty(prospect.offered_products as Array<unknown>, walk.id)
            if (walk.expect !== "completed") {
              assert.isNull(prospect.latest_coverage)
              continue
            }
            const policy = finals.get(walk.id)!.policy!
            const announced = perEndpoint[0]!
              .filter((d) => d.event === "policy.documents_updated" && d.payload.id === policy.id)
              .map((d) => d.payload.policy_url as string)
            const coverage = (yield* awaitProspect(partner, slug, "journey", walk.id, (p) =>
              announced.includes(((p.latest_coverage as Json | null)?.document_url as string) ?? ""),
            )).latest_coverage as Json
            assert.deepInclude(coverage, {
              type: policy.productType,
              cadence: policy.cadence,
              coverage_amount_cents: policy.coverageAmountCents,
              coverage_start_date: policy.coverageStartDate,
              coverage_end_date: policy.coverageEndDate,
              product_payment_cents: policy.paidCents,
            })
          }

          // The documents link: a zip of two PDFs; the regeneration's link is new and the old archive unchanged.
          assert.strictEqual(first.status, 200)
          assert.strictEqual(first.type, "application/zip")
          const files = unzipSync(first.bytes)
          assert.strictEqual(Object.keys(files).length, 2)
          for (const [name, bytes] of Object.entries(files)) {
            assert.match(name, /\.pdf$/)
            const pdf = yield* Effect.promise(() => PDFDocument.load(bytes))
            assert.strictEqual(pdf.getPageCount(), 1, name)
            // Each PDF has a link of its own, which the renter's page shows.
            const alone = yield* archiveAt(`${firstUrl.replace(/\.zip$/, "")}/${name}`)
            assert.strictEqual(alone.status, 200, name)
            assert.strictEqual(alone.type, "application/pdf", name)
            assert.deepStrictEqual(alone.bytes, bytes, name)
          }
          const urls = byEvent("policy.documents_updated")
            .filter((d) => d.payload.id === sdi.id)
            .map((d) => d.payload.policy_url as string)
          assert.strictEqual(urls.length, 2)
          assert.strictEqual(new Set(urls).size, 2)
          const second = yield* archiveAt(urls.find((url) => url !== firstUrl)!)
          assert.strictEqual(second.status, 200)
          assert.strictEqual(Object.keys(unzipSync(second.bytes)).length, 2)
          const again = yield* archiveAt(firstUrl)
          assert.deepStrictEqual(again.bytes, first.bytes)
        }).pipe(Effect.scoped),
    )

    it.effect("answers an unknown documents link with a 404 page that says nothing more", () =>
      Effect.gen(function* () {
        const port = yield* gatewayPort("enrollment")
        const answers = []
        for (const path of [
          `/documents/${"a".repeat(43)}.zip`,
          "/documents/..%2F..%2Fetc",
          "/documents/x",
          `/documents/${"a".repeat(43)}/policy-declaration-SDI-2026-000001.pdf`,
        ]) {
          const answer = yield* httpRequest(port, path)
          assert.strictEqual(answer.status, 404, path)
          assert.strictEqual(answer.headers.get("content-type"), "text/html; charset=utf-8", path)
          answers.push(answer.text)
        }
        assert.strictEqual(new Set(answers).size, 1, "the same page for every unknown document")
        assert.include(answers[0], "<h1>Page not found</h1>")
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { authService } from "../support/Auth.ts"
import { readStream } from "../support/Streams.ts"
import {
  createOwnerThroughApi,
  drainOutbox,
  postBatch,
  postJson,
  postOwner,
  rosterPartner,
} from "../support/Roster.ts"

const service = authService()

const ACCOUNT_NUMBER = "48151623420815"

/** What the ROSTER stream holds for one owner, after the relay has published everything pending. */
const publishedFor = (slug: string) =>
  Effect.gen(function* () {
    yield* drainOutbox
    const messages = yield* readStream("ROSTER")
    return messages.filter((m) => m.subject.startsWith(`roster.${slug}.`))
  })

describe("roster events", () => {
  layer(service.layer, { excludeTestServices: true })((it) => {
    it.effect("publishes every applied item on roster.<owner_slug>.<kind>.<created|updated>, in order", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const slug = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-events",
          name: "Event Owner",
        })
        yield* postOwner(partner, { external_org_id: "org-events", purchase_flow_enabled: true })
        const account = {
          external_system_id: "ba-1",
          display_name: "Operating",
          routing_number: "021000021",
          account_number: ACCOUNT_NUMBER,
        }
        yield* postBatch(partner, slug, "bank_accounts", [account, { external_system_id: "ba-bad" }])
        yield* postBatch(partner, slug, "bank_accounts", [account])
        const property = {
          external_system_id: "prop-1",
          building_name: "Main Tower",
          address: { line_one: "123 Main St", city: "Springfield", state: "IL", zip: "62701" },
        }
        const createdProperties = yield* postBatch(partner, slug, "properties", [
          property,
          { ...property, external_system_id: "prop-bad", type: "castle" },
        ])
        yield* postBatch(partner, slug, "properties", [property])
        const unit = { external_system_id: "u-1", property_external_id: "prop-1", name: "4B" }
        const createdUnits = yield* postBatch(partner, slug, "units", [
          unit,
          { external_system_id: "u-bad", property_external_id: "prop-unknown", name: "1" },
        ])
        yield* postBatch(partner, slug, "units", [unit])

        const published = yield* publishedFor(slug)
        assert.deepStrictEqual(
          published.map((m) => m.subject),
          [
            `roster.${slug}.owner.created`,
            `roster.${slug}.owner.updated`,
            `roster.${slug}.bank_account.created`,
            `roster.${slug}.bank_account.updated`,
            `roster.${slug}.property.created`,
            `roster.${slug}.property.updated`,
            `roster.${slug}.unit.created`,
            `roster.${slug}.unit.updated`,
          ],
        )
        assert.deepInclude(published[0]!.json as object, {
          external_system_id: "org-events",
          action: "created",
          owner_slug: slug,
          purchase_flow_enabled: false,
        })
        assert.deepInclude(published[1]!.json as object, { action: "updated", purchase_flow_enabled: true })
        assert.deepStrictEqual(published[2]!.json, {
          external_system_id: "ba-1",
          action: "created",
          display_name: "Operating",
          routing_number: "021000021",
          account_number_last4: "0815",
          default: true,
        })
        assert.deepStrictEqual(published[4]!.json, createdProperties.results[0])
        assert.deepStrictEqual(published[6]!.json, createdUnits.results[0])
        assert.isTrue(
          published.every((m) => m.msgId !== undefined),
          "each message carries its outbox id for deduplication",
        )
      }),
    )

    it.effect("never carries an account number in a message", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const slug = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-events-bank",
          name: "Event Bank Owner",
        })
        const accountNumbers = ["90817263544536", "11223344556677889900"]
        yield* postBatch(partner, slug, "bank_accounts", [
          {
            external_system_id: "ba-1",
            display_name: "Operating",
            routing_number: "021000021",
            account_number: accountNumbers[0],
          },
          {
            external_system_id: "ba-2",
            display_name: "Payroll",
            routing_number: "021000021",
            account_number: accountNumbers[1],
            default: true,
          },
        ])
        const published = yield* publishedFor(slug)
        assert.deepStrictEqual(
          published.map((m) => m.subject),
          [
            `roster.${slug}.owner.created`,
            `roster.${slug}.bank_account.created`,
            `roster.${slug}.bank_account.created`,
          ],
        )
        const everything = yield* readStream("ROSTER")
        for (const message of everything) {
          const text = JSON.stringify(message.json)
          for (const number of [...accountNumbers, ACCOUNT_NUMBER]) assert.notInclude(text, number)
          assert.notProperty(message.json as object, "account_number")
        }
      }),
    )

    it.effect("publishes nothing for a refused request or a failed item", () =>
      Effect.gen(function* () {
        const partner = yield* rosterPartner()
        const other = yield* rosterPartner()
        const slug = yield* createOwnerThroughApi(partner, {
          external_org_id: "org-events-quiet",
          name: "Quiet Owner",
        })
        const before = yield* publishedFor(slug)
        const refused = yield* postOwner(other, { external_org_id: "org-events-quiet", name: "Hijacked" })
        assert.strictEqual(refused.status, 403)
        const invalid = yield* postOwner(partner, {
          external_org_id: "org-events-quiet",
          embedded_frame_ancestors: ["http://insecure.example.com"],
        })
        assert.strictEqual(invalid.status, 422)
        const oversized = yield* postJson(
          partner,
          `/partners/${slug}/properties`,
          Array.from({ length: 501 }, (_, i) => ({ external_system_id: `p-${i}` })),
        )
        assert.strictEqual(oversized.status, 422)
        const failed = yield* postBatch(partner, slug, "units", [
          { external_system_id: "u-1", property_external_id: "prop-unknown", name: "1" },
        ])
        assert.deepStrictEqual(failed.meta, { created: 0, updated: 0, failed: 1 })
        assert.deepStrictEqual(
          (yield* publishedFor(slug)).map((m) => m.subject),
          before.map((m) => m.subject),
        )
        assert.deepStrictEqual(
          before.map((m) => m.subject),
          [`roster.${slug}.owner.created`],
        )
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  ingestClient,
  envelope,
  postEvent,
  PROSPECT_UPDATE_MAPPING,
  prospectUpdate,
  setMapping,
  sourceMessages,
} from "../support/Ingest.ts"
import {
  completeProspect,
  getProspect,
  PROPERTY,
  postProspect,
  prospectService,
  prospectSetUp,
} from "../support/Prospects.ts"
import { postBatch, postOwner, query } from "../support/Roster.ts"

const service = prospectService()

const INVISIBLE = "must not contain zero-width or bidirectional control characters"

/** "café" composed (U+00E9) and decomposed (e + U+0301): one id written two ways. */
const NFC = "caf\u00e9-1"
const NFD = "cafe\u0301-1"

/** A zero-width space and a right-to-left mark inside an otherwise plain id. */
const LOOKALIKES = [
  ["a zero-width space", "p\u200b-1"],
  ["a right-to-left mark", "p-1\u200f"],
] as const

const REFUSED_PROSPECT_IDS: Array<string> = [...LOOKALIKES.map(([, id]) => id), "plain-1"]

describe("external ids: NFC and invisible characters (hygiene)", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("stores a property sent with an NFC and then an NFD spelling of its id as one property", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* prospectSetUp("org-nfc-property", "nfc-property")
        const property = (id: string) => ({
          ...PROPERTY,
          external_system_id: id,
          building_name: "Nfc Tower",
          pms_property_id: "pms-nfc",
        })
        const first = yield* postBatch(partner, slug, "properties", [property(NFC)])
        assert.strictEqual(first.results[0]!.action, "created", JSON.stringify(first))
        const second = yield* postBatch(partner, slug, "properties", [property(NFD)])
        assert.strictEqual(second.results[0]!.action, "updated", JSON.stringify(second))
        assert.strictEqual(second.results[0]!.external_system_id, NFC)
        const stored = yield* query(
          (sql) =>
            sql<
              Array<{ id: string }>
            >`select external_system_id as id from properties where external_system_id like 'caf%'`,
        )
        assert.deepStrictEqual(
          stored.map((row) => row.id),
          [NFC],
        )
      }),
    )

    it.effect("reaches one prospect through the NFC and the NFD spelling of its id, posted and fetched", () =>
      Effect.gen(function* () {
        const { partner, slug } = yield* prospectSetUp("org-nfc-prospect", "nfc-src")
        const created = yield* postProspect(partner, slug, completeProspect("nfc-src", NFC))
        assert.strictEqual(created.body.status_code, 201, created.text)
        const again = yield* postProspect(
          partner,
          slug,
          completeProspect("nfc-src", NFD, { first_name: "Jon" }),
        )
        assert.strictEqual(again.body.status_code, 200, again.text)
        assert.strictEqual(again.body.prospect.id, created.body.prospect.id)
        const fetched = yield* getProspect(partner, slug, "nfc-src", NFD)
        assert.strictEqual(fetched.status, 200, fetched.text)
        assert.strictEqual(fetched.body.prospect.id, created.body.prospect.id)
        assert.strictEqual(fetched.body.prospect.source_prospect_id, NFC)
      }),
    )

    it.effect(
      "fails a roster item whose id holds a zero-width space or a right-to-left mark, naming the field",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* prospectSetUp("org-invisible-roster", "invisible-roster")
          for (const [name, id] of LOOKALIKES) {
            const properties = yield* postBatch(partner, slug, "properties", [
              { ...PROPERTY, external_system_id: id },
            ])
            assert.deepStrictEqual(properties.results[0]!.errors, { external_system_id: [INVISIBLE] }, name)
            const units = yield* postBatch(partner, slug, "units", [
              { external_system_id: "u-1", property_external_id: id, name: "1" },
            ])
            assert.deepStrictEqual(units.results[0]!.errors, { property_external_id: [INVISIBLE] }, name)
            const owner = yield* postOwner(partner, { external_org_id: id, name: "Lookalike" })
            assert.strictEqual(owner.status, 422, owner.text)
            assert.deepStrictEqual(JSON.parse(owner.text).errors, { external_org_id: [INVISIBLE] }, name)
          }
          const stored = yield* query(
            (sql) => sql<Array<{ n: number }>>`
            select (select count(*) from properties where external_system_id in ${sql(LOOKALIKES.map(([, id]) => id))})
                 + (select count(*) from owners where name = 'Lookalike') as n`,
          )
          assert.strictEqual(Number(stored[0]!.n), 0)
        }),
    )

    it.effect(
      "refuses a prospect whose id, or its nested property's, holds a zero-width space or a right-to-left mark with 422",
      () =>
        Effect.gen(function* () {
          const { partner, slug } = yield* prospectSetUp("org-invisible-prospect", "invisible-src")
          for (const [name, id] of LOOKALIKES) {
            const own = yield* postProspect(partner, slug, completeProspect("invisible-src", id))
            assert.strictEqual(own.status, 422, `${name}: ${own.text}`)
            assert.deepStrictEqual(
              JSON.parse(own.text).errors,
              { source_prospect_id: [`Source prospect id ${INVISIBLE}`] },
              name,
            )
            const nested = yield* postProspect(partner, slug, {
              ...completeProspect("invisible-src", "plain-1"),
              property: { ...PROPERTY, external_system_id: id },
            })
            assert.strictEqual(nested.status, 422, `${name}: ${nested.text}`)
            assert.deepInclude(
              JSON.parse(nested.text).errors,
              { "property.external_system_id": [`External system id ${INVISIBLE}`] },
              name,
            )
          }
          const stored = yield* query(
            (sql) =>
              sql<
                Array<{ n: number }>
              >`select count(*)::int as n from prospects where source_prospect_id in ${sql(REFUSED_PROSPECT_IDS)}`,
          )
          assert.strictEqual(stored[0]!.n, 0)
        }),
    )

    it.effect(
      "refuses an inbound event whose mapped prospect id holds a zero-width space or a right-to-left mark with 422",
      () =>
        Effect.gen(function* () {
          const { slug } = yield* prospectSetUp("org-invisible-events", "invisible-events")
          const client = yield* ingestClient("invisible-events", [slug])
          yield* setMapping("invisible-events", PROSPECT_UPDATE_MAPPING)
          for (const [name, id] of LOOKALIKES) {
            const answer = yield* postEvent(
              client,
              envelope("invisible-events", prospectUpdate(id, "2026-01-10T12:00:00Z")),
            )
            assert.strictEqual(answer.status, 422, `${name}: ${answer.text}`)
            const errors = JSON.parse(answer.text).errors as Record<string, Array<string>>
            assert.match(
              errors.source_prospect_id?.[0] ?? "",
              new RegExp(`^${INVISIBLE} \\(mapped from `),
              name,
            )
          }
          assert.lengthOf(yield* sourceMessages("invisible-events"), 0)
        }),
    )
  })
})

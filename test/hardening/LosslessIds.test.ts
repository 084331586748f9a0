import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { gatewayPort, httpRequest } from "../support/Auth.ts"
import {
  awaitLogged,
  envelope,
  ingestSetUp,
  postEvent,
  prospectRows,
  prospectUpdate,
  type IngestSetUp,
} from "../support/Ingest.ts"
import {
  issueSource,
  PROPERTY,
  prospectPartner,
  prospectService,
  provisionedOwner,
} from "../support/Prospects.ts"
import { query, type RosterPartner } from "../support/Roster.ts"

const service = prospectService()

/** 2^53 + 1 and 2^53: one double, two renters. */
const ABOVE = "9007199254740993"
const BELOW = "9007199254740992"

/** JSON text of `value` with the string `"#id"` written as the bare number `digits`, as a partner's system sends it. */
const withNumericId = (value: unknown, digits: string) => JSON.stringify(value).replace('"#id"', digits)

/** POSTs an event whose payload `id` is the number `digits`; its event id once the gateway accepted it. */
const sendNumericId = (
  setUp: IngestSetUp,
  source: string,
  digits: string,
  payload: Record<string, unknown>,
) =>
  Effect.gen(function* () {
    const answer = yield* postEvent(
      setUp.client,
      withNumericId(envelope(source, { ...payload, id: "#id" }), digits),
    )
    assert.strictEqual(answer.status, 202, answer.text)
    return (JSON.parse(answer.text) as { event_id: string }).event_id
  })

const applicant = (first_name: string, email: string) => ({
  applicant: { first_name, last_name: "Renter", email, phone: "5551234567" },
})

/** POSTs JSON text as it is to the partner gateway. */
const postText = (partner: RosterPartner, path: string, text: string) =>
  Effect.gen(function* () {
    const answer = yield* httpRequest(yield* gatewayPort("partner-api"), path, {
      method: "POST",
      headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
      body: text,
    })
    return {
      status: answer.status,
      text: answer.text,
      body: JSON.parse(answer.text) as Record<string, unknown>,
    }
  })

describe("ids sent as JSON numbers", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "keep every digit on ingest: events for 9007199254740993 and 9007199254740992 never touch one prospect",
      () =>
        Effect.gen(function* () {
          const source = "lossless-ids"
          const setUp = yield* ingestSetUp("org-lossless-ids", source)
          const above = yield* sendNumericId(setUp, source, ABOVE, {
            ...prospectUpdate("#id", "2026-01-10T12:00:00Z"),
            ...applicant("Ann", "ann@example.com"),
          })
          const below = yield* sendNumericId(setUp, source, BELOW, {
            ...prospectUpdate("#id", "2026-01-10T12:00:01Z"),
            ...applicant("Bob", "bob@example.com"),
          })
          assert.notStrictEqual(above, below)
          const log = yield* awaitLogged(source, [above, below])
          const logged = (eventId: string) => log.find((r) => r.event_id === eventId)!
          assert.deepStrictEqual(
            [above, below].map((id) => [logged(id).outcome, logged(id).source_prospect_id]),
            [
              ["applied", ABOVE],
              ["applied", BELOW],
            ],
          )
          assert.notStrictEqual(logged(above).prospect_id, logged(below).prospect_id)
          const [ann] = yield* prospectRows(source, ABOVE)
          const [bob] = yield* prospectRows(source, BELOW)
          assert.deepStrictEqual([ann?.first_name, ann?.email], ["Ann", "ann@example.com"])
          assert.deepStrictEqual([bob?.first_name, bob?.email], ["Bob", "bob@example.com"])
        }),
    )

    it.effect("name the same prospect as the same digits sent as text", () =>
      Effect.gen(function* () {
        const source = "lossless-text"
        const setUp = yield* ingestSetUp("org-lossless-text", source)
        const asNumber = yield* sendNumericId(
          setUp,
          source,
          ABOVE,
          prospectUpdate("#id", "2026-01-10T12:00:00Z"),
        )
        const asText = yield* postEvent(
          setUp.client,
          envelope(source, {
            ...prospectUpdate(ABOVE, "2026-01-11T12:00:00Z"),
            ...applicant("Ann", "ann@example.com"),
          }),
        )
        assert.strictEqual(asText.status, 202, asText.text)
        const textId = (JSON.parse(asText.text) as { event_id: string }).event_id
        const log = yield* awaitLogged(source, [asNumber, textId])
        assert.deepStrictEqual(
          log.map((r) => r.outcome),
          ["applied", "applied"],
        )
        assert.strictEqual(log[0]!.prospect_id, log[1]!.prospect_id)
        const rows = yield* prospectRows(source, ABOVE)
        assert.deepStrictEqual(
          rows.map((r) => r.first_name),
          ["Ann"],
        )
      }),
    )

    it.effect("are one id only when they are one value: 1e3 is 1000, 1.0000000000000001 is not 1", () =>
      Effect.gen(function* () {
        const source = "lossless-values"
        const setUp = yield* ingestSetUp("org-lossless-values", source)
        const sent = [
          ["1", "1"],
          ["1.0000000000000001", "1.0000000000000001"],
          ["1000", "1000"],
          ["1e3", "1000"],
          ["12.50", "12.5"],
        ] as const
        const ids: Array<string> = []
        for (const [n, [digits]] of sent.entries()) {
          const at = `2026-01-10T12:00:0${n}Z`
          ids.push(yield* sendNumericId(setUp, source, digits, prospectUpdate("#id", at)))
        }
        const log = yield* awaitLogged(source, ids)
        assert.deepStrictEqual(
          ids.map((id) => {
            const row = log.find((r) => r.event_id === id)!
            return [row.outcome, row.source_prospect_id]
          }),
          sent.map(([, id]) => ["applied", id]),
        )
        const stored = yield* query(
          (sql) => sql<Array<{ id: string }>>`
            select source_prospect_id as id from prospects where source = ${source} order by source_prospect_id`,
        )
        assert.deepStrictEqual(
          stored.map((r) => r.id),
          ["1", "1.0000000000000001", "1000", "12.5"],
        )
      }),
    )

    it.effect("are refused with 422 naming the field by the Partner API, whose ids are strings", () =>
      Effect.gen(function* () {
        const partner = yield* prospectPartner()
        yield* issueSource({ code: "lossless-api", clients: [partner.clientId] })
        const slug = yield* provisionedOwner(partner, "org-lossless-api")
        const prospect = yield* postText(
          partner,
          `/partners/${slug}/prospects`,
          withNumericId({ prospect: { source: "lossless-api", source_prospect_id: "#id" } }, ABOVE),
        )
        assert.strictEqual(prospect.status, 422, prospect.text)
        assert.deepStrictEqual(Object.keys(prospect.body.prospect as object), ["source_prospect_id"])
        const properties = yield* postText(
          partner,
          `/partners/${slug}/properties`,
          withNumericId([{ ...PROPERTY, external_system_id: "#id", pms_property_id: "pms-lossless" }], ABOVE),
        )
        const [item] = (properties.body as { results: Array<{ action: string; errors?: object }> }).results
        assert.strictEqual(item?.action, "failed", properties.text)
        assert.include(Object.keys(item?.errors ?? {}), "external_system_id")
        const stored = yield* query(
          (sql) =>
            sql<Array<{ n: number }>>`select count(*)::int as n from prospects where source = 'lossless-api'`,
        )
        assert.strictEqual(stored[0]!.n, 0)
      }),
    )
  })
})

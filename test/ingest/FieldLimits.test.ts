import { randomBytes } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { partitionOf } from "../../backend/platform/Partition.ts"
import {
  envelope,
  expectedEventId,
  ingestLog,
  ingestSetUp,
  postEvent,
  prospectRows,
  prospectUpdate,
  sourceMessages,
} from "../support/Ingest.ts"
import { prospectService } from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

const service = prospectService()

/** 9,000 characters that do not compress, so Postgres's index limit is not hidden by TOAST compression. */
const LONG_ID = randomBytes(4500).toString("hex")
const NOW = "2026-01-10T12:00:00Z"

/** Publishes `data` on the source's INGEST subject as if the gateway had stored it, bypassing the gateway. */
const storeDirectly = (source: string, data: string, msgID: string) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    yield* nats.publish(
      nats.subject(`ingest.${source}.ProspectUpdate.${partitionOf(msgID, 16)}`),
      new TextEncoder().encode(data),
      { msgID, headers: { "Ingest-Received-At": NOW } },
    )
  })

describe("the ingestion gateway's field limits", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("answers 422 for a mapped field longer than the prospect endpoint takes, storing nothing", () =>
      Effect.gen(function* () {
        const setUp = yield* ingestSetUp("org-limits-gw", "limitsgw")
        const before = (yield* sourceMessages("limitsgw")).length
        const tooLong = yield* postEvent(setUp.client, envelope("limitsgw", prospectUpdate(LONG_ID, NOW)))
        assert.strictEqual(tooLong.status, 422, tooLong.text)
        assert.deepStrictEqual(JSON.parse(tooLong.text), {
          status_code: 422,
          error: "Event invalid.",
          event: { source_prospect_id: "is too long (maximum is 255 characters) (mapped from /id)" },
          errors: { source_prospect_id: ["is too long (maximum is 255 characters) (mapped from /id)"] },
        })
        const escape = yield* postEvent(
          setUp.client,
          envelope(
            "limitsgw",
            prospectUpdate("p-esc", NOW, {
              applicant: {
                first_name: "\u001b[31mRed",
                last_name: "Roe\r\nX-Injected: 1",
                phone: "5551234567",
              },
            }),
          ),
        )
        assert.strictEqual(escape.status, 422, escape.text)
        assert.deepStrictEqual(JSON.parse(escape.text).errors, {
          first_name: ["must not contain control characters (mapped from /applicant/first_name)"],
          last_name: ["must not contain control characters (mapped from /applicant/last_name)"],
        })
        assert.strictEqual((yield* sourceMessages("limitsgw")).length, before)
        // A well-formed event of the same source still goes through.
        const fine = yield* postEvent(setUp.client, envelope("limitsgw", prospectUpdate("p-fine", NOW)))
        assert.strictEqual(fine.status, 202, fine.text)
      }),
    )

    it.effect("logs an event accepted before its limits could be checked as ignored, with the reason", () =>
      Effect.gen(function* () {
        yield* ingestSetUp("org-limits-actor", "limitsactor")
        const payload = prospectUpdate(LONG_ID, NOW)
        const eventId = expectedEventId("limitsactor", "ProspectUpdate", payload)
        yield* storeDirectly("limitsactor", JSON.stringify(envelope("limitsactor", payload)), eventId)
        const rows = yield* eventually(ingestLog("limitsactor"), (rows) => rows.length > 0)
        assert.deepStrictEqual(
          rows.map((r) => [r.event_id, r.outcome, r.source_prospect_id, r.reason]),
          [
            [
              eventId,
              "ignored",
              null,
              "source_prospect_id is too long (maximum is 255 characters) (mapped from /id)",
            ],
          ],
        )
        assert.deepStrictEqual(yield* prospectRows("limitsactor", LONG_ID), [])
      }),
    )

    it.effect("logs every event that ends in a dead letter as failed, with its reason", () =>
      Effect.gen(function* () {
        yield* ingestSetUp("org-limits-dead", "limitsdead")
        // No payload: the actor cannot decode it, so it goes straight to the dead letters.
        yield* storeDirectly("limitsdead", JSON.stringify({ source: "limitsdead" }), "dead-1")
        const rows = yield* eventually(ingestLog("limitsdead"), (rows) => rows.length > 0)
        assert.strictEqual(rows.length, 1)
        assert.deepInclude(rows[0], {
          event_id: "dead-1",
          source: "limitsdead",
          event_type: "ProspectUpdate",
          outcome: "failed",
        })
        assert.match(rows[0]!.reason ?? "", /^undecodable: /)
        const dead = yield* query(
          (sql) => sql<Array<{ reason: string }>>`
            select reason from dead_letters where actor = 'ingest' and stream_seq = ${rows[0]!.stream_seq}`,
        )
        assert.deepStrictEqual(
          dead.map((d) => d.reason),
          [rows[0]!.reason],
        )
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Ingest } from "../../backend/ingest/Ingest.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { partitionOf } from "../../backend/platform/Partition.ts"
import {
  awaitLogged,
  envelope,
  ingestSetUp,
  prospectRows,
  prospectUpdate,
  send,
  sourceMessages,
} from "../support/Ingest.ts"
import { call, operatorSession } from "../support/Operator.ts"
import { prospectService } from "../support/Prospects.ts"

const service = prospectService({ ROLES: "partner-api,ingest-api,workers,console", CONSOLE_PORT: "0" })

const SOURCE = "logapi"

interface Entry {
  readonly id: number
  readonly event_id: string
  readonly outcome: string
  readonly reason: string | null
  readonly source: string
  readonly client_id: string | null
  readonly event_type: string
  readonly received_at: string
  readonly occurred_at: string | null
  readonly source_prospect_id: string | null
  readonly prospect_id: string | null
  readonly fields: Record<string, unknown> | null
  readonly stream_seq: number
}

describe("the console's ingest log", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect(
      "lists every event with its outcome, reason, source, client, times and mapped fields, filtered and paged",
      () =>
        Effect.gen(function* () {
          const setUp = yield* ingestSetUp("org-ingest-log", SOURCE)
          const viewer = yield* operatorSession("ingest-viewer@log.test", "viewer")
          const newer = prospectUpdate("log-1", "2026-01-10T12:00:00Z")
          const applied = yield* send(setUp, envelope(SOURCE, newer))
          yield* awaitLogged(SOURCE, [applied])
          const stale = yield* send(
            setUp,
            envelope(SOURCE, prospectUpdate("log-1", "2026-01-09T12:00:00Z", { move_in: "2026-04-01" })),
          )
          yield* awaitLogged(SOURCE, [stale])
          // The same stored message handed to the actor again (a redelivery after its commit): a duplicate.
          const ingest = yield* Ingest
          const stored = (yield* sourceMessages(SOURCE)).find((m) => m.headers["Nats-Msg-Id"] === applied)!
          yield* ingest.consume({
            event: JSON.parse(stored.data.toString("utf8")),
            eventId: applied,
            receivedAt: stored.headers["Ingest-Received-At"]!,
            clientId: stored.headers["Ingest-Client"]!,
            streamSequence: stored.seq,
          })
          const ignored = yield* send(setUp, envelope(SOURCE, { id: "log-2" }, "Unmapped"))
          // No payload: the actor cannot decode it, so it is a dead letter, logged failed.
          const nats = yield* Nats
          yield* nats.publish(
            nats.subject(`ingest.${SOURCE}.ProspectUpdate.${partitionOf("log-dead", 16)}`),
            new TextEncoder().encode(JSON.stringify({ source: SOURCE })),
            { msgID: "log-dead", headers: { "Ingest-Received-At": "2026-01-10T12:00:06.000Z" } },
          )
          yield* awaitLogged(SOURCE, [ignored, "log-dead"])
          const all = yield* call("GET", `/api/ingest?source=${SOURCE}`, viewer)
          assert.strictEqual(all.status, 200, all.text)
          const entries = all.body.entries as Array<Entry>
          assert.deepStrictEqual(
            entries.map((e) => [e.event_id, e.outcome]),
            [
              ["log-dead", "failed"],
              [ignored, "ignored"],
              [applied, "duplicate"],
              [stale, "stale"],
              [applied, "applied"],
            ],
          )
          // Newest first in numeric order of the log's ids.
          assert.deepStrictEqual(
            entries.map((e) => e.id),
            [...entries.map((e) => e.id)].sort((a, b) => b - a),
          )
          const [prospect] = yield* prospectRows(SOURCE, "log-1")
          const first = entries.at(-1)!
          assert.deepStrictEqual({ ...first, id: 0, received_at: "" }, {
            id: 0,
            event_id: applied,
            outcome: "applied",
            reason: null,
            source: SOURCE,
            client_id: setUp.client.clientId,
            event_type: "ProspectUpdate",
            received_at: "",
            occurred_at: "2026-01-10T12:00:00.000Z",
            source_prospect_id: "log-1",
            prospect_id: `tpp_${prospect!.id}`,
            fields: {
              source_prospect_id: "log-1",
              pms_property_id: "pms-prop-1",
              occurred_at: "2026-01-10T12:00:00Z",
              first_name: "Jane",
              last_name: "Roe",
              email: "jane@example.com",
              phone: "5551234567",
              earliest_move_in_date: "2026-03-01",
            },
            stream_seq: first.stream_seq,
          } as Entry)
          assert.match(first.received_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
          assert.deepInclude(entries[3]!, {
            reason: "a newer event was already applied",
            source_prospect_id: "log-1",
          })
          assert.deepInclude(entries[2]!, { reason: "this event was already applied" })
          assert.deepInclude(entries[1]!, {
            reason: `no mapping for event type Unmapped on source ${SOURCE}`,
            event_type: "Unmapped",
            fields: null,
            prospect_id: null,
          })
          assert.deepInclude(entries[0]!, {
            client_id: null,
            fields: null,
            received_at: "2026-01-10T12:00:06.000Z",
          })
          assert.match(entries[0]!.reason ?? "", /^undecodable: /)

          const outcome = yield* call("GET", `/api/ingest?source=${SOURCE}&outcome=stale`, viewer)
          assert.deepStrictEqual(
            (outcome.body.entries as Array<Entry>).map((e) => e.event_id),
            [stale],
          )
          const byPartnerId = yield* call("GET", `/api/ingest?prospect=log-1`, viewer)
          assert.deepStrictEqual(
            (byPartnerId.body.entries as Array<Entry>).map((e) => e.outcome),
            ["duplicate", "stale", "applied"],
          )
          const byServiceId = yield* call("GET", `/api/ingest?prospect=tpp_${prospect!.id}`, viewer)
          assert.deepStrictEqual(byServiceId.body.entries, byPartnerId.body.entries)
          const since = yield* call(
            "GET",
            `/api/ingest?source=${SOURCE}&since=2026-01-10T12:00:06Z&until=2026-01-10T12:00:07Z`,
            viewer,
          )
          assert.deepStrictEqual(
            (since.body.entries as Array<Entry>).map((e) => e.event_id),
            ["log-dead"],
          )

          const page1 = yield* call("GET", `/api/ingest?source=${SOURCE}&limit=2`, viewer)
          assert.deepStrictEqual(page1.body.entries, entries.slice(0, 2))
          assert.isString(page1.body.next_cursor)
          const page2 = yield* call(
            "GET",
            `/api/ingest?source=${SOURCE}&limit=2&cursor=${page1.body.next_cursor}`,
            viewer,
          )
          assert.deepStrictEqual(page2.body.entries, entries.slice(2, 4))
          const page3 = yield* call(
            "GET",
            `/api/ingest?source=${SOURCE}&limit=2&cursor=${page2.body.next_cursor}`,
            viewer,
          )
          assert.deepStrictEqual(page3.body.entries, entries.slice(4))
          assert.isNull(page3.body.next_cursor)
        }),
    )

    it.effect("refuses a bad filter with 422 naming each field, and asks for a session", () =>
      Effect.gen(function* () {
        const viewer = yield* operatorSession("ingest-viewer2@log.test", "viewer")
        const bad = yield* call("GET", "/api/ingest?outcome=lost&since=yesterday&limit=500&cursor=%%", viewer)
        assert.strictEqual(bad.status, 422, bad.text)
        assert.deepInclude(bad.body, {
          status_code: 422,
          error: "Invalid filter.",
          filter: {
            outcome: "must be one of applied, stale, duplicate, ignored, failed",
            since: "must be an ISO 8601 date-time such as 2026-03-01T14:30:00Z",
            limit: "must be an integer from 1 to 100",
            cursor: "is not a cursor of this list",
          },
        })
        const anonymous = yield* call("GET", "/api/ingest")
        assert.strictEqual(anonymous.status, 401, anonymous.text)
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { IngestEvent } from "../../backend/ingest/Domain.ts"
import { Ingest } from "../../backend/ingest/Ingest.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import {
  awaitLogged,
  envelope,
  expectedEventId,
  ingestLog,
  ingestSetUp,
  outcomes,
  prospectRows,
  prospectUpdate,
  send,
  sourceMessages,
} from "../support/Ingest.ts"
import { getProspect, prospectService } from "../support/Prospects.ts"
import { eventually, readStream } from "../support/Streams.ts"

const service = prospectService()

describe("ingest actor", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("keeps the newest event's state when older events arrive after it, logging them stale", () =>
      Effect.gen(function* () {
        const source = "act-order"
        const setUp = yield* ingestSetUp("org-act-order", source)
        const at = (hour: number, name: string) =>
          envelope(
            source,
            prospectUpdate("p-order", `2026-01-10T${String(hour).padStart(2, "0")}:00:00Z`, {
              applicant: {
                first_name: name,
                last_name: "Roe",
                email: "jane@example.com",
                phone: "5551234567",
              },
            }),
          )
        const newest = yield* send(setUp, at(12, "Newest"))
        const oldest = yield* send(setUp, at(9, "Oldest"))
        const middle = yield* send(setUp, at(11, "Middle"))
        const log = yield* awaitLogged(source, [newest, oldest, middle])
        assert.deepStrictEqual(outcomes(log), [
          [newest, "applied", null],
          [oldest, "stale", "a newer event was already applied"],
          [middle, "stale", "a newer event was already applied"],
        ])
        const [row] = yield* prospectRows(source, "p-order")
        assert.strictEqual(row!.first_name, "Newest")
        assert.strictEqual(row!.version, 1, "a stale event wrote the prospect")
        assert.strictEqual(row!.last_event_at, "2026-01-10T12:00:00.000Z")
        for (const entry of log) assert.strictEqual(entry.prospect_id, row!.id)
        const shown = yield* getProspect(setUp.partner, setUp.slug, source, "p-order")
        assert.strictEqual(shown.body.prospect.first_name, "Newest")

        // A newer event still applies, written in Unix milliseconds; an older one in Unix seconds does not.
        const newer = yield* send(
          setUp,
          envelope(
            source,
            prospectUpdate("p-order", "", {
              updated_at: Date.parse("2026-01-10T13:00:00Z"),
              applicant: {
                first_name: "Newer",
                last_name: "Roe",
                email: "jane@example.com",
                phone: "5551234567",
              },
            }),
          ),
        )
        const olderSeconds = yield* send(
          setUp,
          envelope(
            source,
            prospectUpdate("p-order", "", {
              updated_at: Date.parse("2026-01-10T12:30:00Z") / 1000,
              applicant: {
                first_name: "Older",
                last_name: "Roe",
                email: "jane@example.com",
                phone: "5551234567",
              },
            }),
          ),
        )
        const after = yield* awaitLogged(source, [newer, olderSeconds])
        assert.deepStrictEqual(outcomes(after.slice(3)), [
          [newer, "applied", null],
          [olderSeconds, "stale", "a newer event was already applied"],
        ])
        const [final] = yield* prospectRows(source, "p-order")
        assert.strictEqual(final!.first_name, "Newer")
        assert.strictEqual(final!.last_event_at, "2026-01-10T13:00:00.000Z")
        assert.strictEqual(final!.version, 2)
      }),
    )

    it.effect("applies an event once when the actor is handed it again (redelivery after the commit)", () =>
      Effect.gen(function* () {
        const source = "act-redeliver"
        const setUp = yield* ingestSetUp("org-act-redeliver", source)
        const first = yield* send(
          setUp,
          envelope(source, prospectUpdate("p-redeliver", "2026-01-10T12:00:00Z")),
        )
        const older = yield* send(
          setUp,
          envelope(source, prospectUpdate("p-redeliver", "2026-01-10T08:00:00Z")),
        )
        yield* awaitLogged(source, [first, older])
        const before = (yield* prospectRows(source, "p-redeliver"))[0]!

        // JetStream's Nats-Msg-Id window only stops a repeat that reaches the stream within two minutes. One
        // repeat that gets past it in real life is a redelivery: a worker commits the prospect and its log, then
        // dies before its ack lands, and JetStream hands the same stored message (same Nats-Msg-Id and stream
        // sequence) to the next consumer. Handing the actor's handler the stored messages again is exactly that.
        const ingest = yield* Effect.service(Ingest)
        for (const message of yield* sourceMessages(source)) {
          const outcome = yield* ingest.consume({
            event: JSON.parse(message.data.toString("utf8")),
            eventId: message.headers["Nats-Msg-Id"]!,
            receivedAt: message.headers["Ingest-Received-At"]!,
            clientId: message.headers["Ingest-Client"]!,
            streamSequence: message.seq,
          })
          assert.strictEqual(outcome, "duplicate")
        }
        const log = yield* ingestLog(source)
        assert.deepStrictEqual(outcomes(log), [
          [first, "applied", null],
          [older, "stale", "a newer event was already applied"],
          [first, "duplicate", "this event was already applied"],
          [older, "duplicate", "this event was already applied"],
        ])
        assert.deepStrictEqual(yield* prospectRows(source, "p-redeliver"), [before])
      }),
    )

    it.effect("applies one batch's events of a prospect in order, as if they had come one at a time", () =>
      Effect.gen(function* () {
        const source = "act-batch"
        const setUp = yield* ingestSetUp("org-act-batch", source)
        const ingest = yield* Effect.service(Ingest)
        const event = (id: string, at: string, firstName: string) => {
          const body = envelope(
            source,
            prospectUpdate(id, at, {
              applicant: {
                first_name: firstName,
                last_name: "Roe",
                email: "jane@example.com",
                phone: "5551234567",
              },
            }),
          )
          return { body, eventId: expectedEventId(source, body.event_type, body.payload) }
        }
        const created = event("p-batch", "2026-01-10T10:00:00Z", "First")
        const older = event("p-batch", "2026-01-10T09:00:00Z", "Older")
        const newer = event("p-batch", "2026-01-10T11:00:00Z", "Newer")
        const badPhone = envelope(
          source,
          prospectUpdate("p-batch", "2026-01-10T12:00:00Z", {
            applicant: { first_name: "Bad", last_name: "Roe", email: "jane@example.com", phone: "+1 555" },
          }),
        )
        const other = event("p-batch-2", "2026-01-10T10:00:00Z", "Other")
        const batch = [
          created,
          older,
          newer,
          { body: badPhone, eventId: expectedEventId(source, badPhone.event_type, badPhone.payload) },
          created,
          other,
        ].map((e, i) => ({
          event: e.body as IngestEvent,
          eventId: e.eventId,
          receivedAt: "2026-01-10T12:00:00.000Z",
          clientId: setUp.client.clientId,
          streamSequence: 1_000_000 + i,
        }))
        const outcomes = yield* ingest.consumeBatch(batch)
        assert.deepStrictEqual(outcomes, ["applied", "stale", "applied", "ignored", "duplicate", "applied"])
        const log = yield* ingestLog(source)
        assert.deepStrictEqual(
          log.map((r) => [r.outcome, r.reason, Number(r.stream_seq)]),
          [
            ["applied", null, 1_000_000],
            ["stale", "a newer event was already applied", 1_000_001],
            ["applied", null, 1_000_002],
            ["ignored", "Phone is not valid", 1_000_003],
            ["duplicate", "this event was already applied", 1_000_004],
            ["applied", null, 1_000_005],
          ],
        )
        const [row] = yield* prospectRows(source, "p-batch")
        assert.strictEqual(row!.first_name, "Newer")
        assert.strictEqual(row!.version, 2, "one version per applied event")
        assert.strictEqual(row!.last_event_at, "2026-01-10T11:00:00.000Z")
        for (const entry of log.slice(0, 3)) assert.strictEqual(entry.prospect_id, row!.id)
        assert.strictEqual(log[5]!.prospect_id, (yield* prospectRows(source, "p-batch-2"))[0]!.id)

        // The events each applied event would have announced on its own: created, then incomplete once (the second
        // write leaves it incomplete), for each prospect.
        const announced = yield* eventually(
          Effect.map(readStream("EVENTS"), (messages) =>
            messages
              .filter((m) => m.subject.startsWith(`events.${setUp.slug}.prospect.`))
              .map((m) => m.subject.slice(`events.${setUp.slug}.`.length))
              .sort(),
          ),
          (subjects) => subjects.length >= 4,
        )
        assert.deepStrictEqual(announced, [
          "prospect.created",
          "prospect.created",
          "prospect.incomplete",
          "prospect.incomplete",
        ])
      }),
    )

    it.effect(
      "applies an event once when it is POSTed again after the duplicate window (logged duplicate)",
      () =>
        Effect.gen(function* () {
          const source = "act-window"
          const setUp = yield* ingestSetUp("org-act-window", source)
          const event = envelope(source, prospectUpdate("p-window", "2026-01-10T12:00:00Z"))
          const eventId = yield* send(setUp, event)
          yield* awaitLogged(source, [eventId])
          const before = (yield* prospectRows(source, "p-window"))[0]!

          // Waiting out the real two-minute window is not practical, so this test's own INGEST stream gets a
          // one-second window; the repeat is then POSTed until JetStream stores it a second time, as it would
          // store a partner's retry made after the real window.
          const nats = yield* Nats
          const client = yield* NatsClient
          const stream = nats.streamName("INGEST")
          const info = yield* Effect.promise(() => client.jsm.streams.info(stream))
          yield* Effect.promise(() =>
            client.jsm.streams.update(stream, { ...info.config, duplicate_window: 1_000_000_000 }),
          )
          yield* Effect.addFinalizer(() =>
            Effect.promise(() => client.jsm.streams.update(stream, info.config)).pipe(Effect.ignore),
          )
          yield* eventually(
            Effect.andThen(send(setUp, event), sourceMessages(source)),
            (messages) => messages.length >= 2,
          )
          const messages = yield* sourceMessages(source)
          assert.deepStrictEqual(
            messages.map((m) => m.headers["Nats-Msg-Id"]),
            [eventId, eventId],
          )
          const log = yield* eventually(ingestLog(source), (rows) => rows.length >= 2)
          assert.deepStrictEqual(
            log.map((r) => [r.event_id, r.outcome, r.reason, Number(r.stream_seq)]),
            [
              [eventId, "applied", null, messages[0]!.seq],
              [eventId, "duplicate", "this event was already applied", messages[1]!.seq],
            ],
          )
          assert.deepStrictEqual(yield* prospectRows(source, "p-window"), [before])
        }).pipe(Effect.scoped),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { IngestEvent } from "../../backend/ingest/Domain.ts"
import { Ingest } from "../../backend/ingest/Ingest.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { ingestClient, postEvent, prospectUpdate } from "../support/Ingest.ts"
import {
  awaitProspect,
  completeProspect,
  getProspect,
  postProspect,
  PROPERTY,
  prospectService,
  provisionedOwner,
} from "../support/Prospects.ts"
import { postBatch, query } from "../support/Roster.ts"
import { eventually, readStream } from "../support/Streams.ts"
import {
  awaitLogged,
  envelope,
  expectedEventId,
  type IngestSetUp,
  ingestLog,
  ingestSetUp,
  type LogRow,
  prospectRows,
  sourceMessages,
} from "./support.ts"

const service = prospectService()

/** POSTs the event and returns its id; dies unless the gateway accepted it. */
const send = (setUp: IngestSetUp, body: unknown) =>
  Effect.gen(function* () {
    const answer = yield* postEvent(setUp.client, body)
    if (answer.status !== 202)
      return yield* Effect.die(new Error(`event refused: ${answer.status} ${answer.text}`))
    return (JSON.parse(answer.text) as { event_id: string }).event_id
  })

/** The log record of one event, once it is there. */
const logOf = (source: string, eventId: string) =>
  Effect.map(awaitLogged(source, [eventId]), (rows) => rows.find((r) => r.event_id === eventId)!)

const outcomes = (rows: ReadonlyArray<LogRow>) => rows.map((r) => [r.event_id, r.outcome, r.reason])

/** The owner's one building (`prop-1`) gets another PMS property id. */
const renameBuilding = (setUp: IngestSetUp, slug: string, pmsPropertyId: string) =>
  Effect.gen(function* () {
    const batch = yield* postBatch(setUp.partner, slug, "properties", [
      { ...PROPERTY, pms_property_id: pmsPropertyId },
    ])
    assert.strictEqual(batch.results[0]!.action, "updated", JSON.stringify(batch.results))
  })

/** A payload in the partner's names carrying every field the spec requires, and its mapping. */
const FULL_MAPPING = {
  ProspectUpdate: {
    source_prospect_id: "/id",
    pms_property_id: "/property/code",
    pms_unit_id: "/unit/code",
    occurred_at: "/updated_at",
    first_name: "/applicant/first_name",
    last_name: "/applicant/last_name",
    email: "/applicant/email",
    phone: "/applicant/phone",
    birthdate: "/applicant/birthdate",
    has_ssn: "/applicant/has_ssn",
    employment_status: "/applicant/employment",
    yearly_income: "/applicant/income",
    screening_result: "/screening/result",
    earliest_move_in_date: "/lease/move_in",
    lease_end_date: "/lease/end",
    monthly_rent_cents: "/lease/rent",
    deposit_amount_cents: "/lease/deposit",
    terms_accepted_at: "/terms_accepted_at",
    authorized_members: "/members",
  },
}
const fullPayload = (id: string, updatedAt: string) => ({
  id,
  property: { code: "pms-prop-1" },
  unit: { code: "pms-unit-1" },
  updated_at: updatedAt,
  applicant: {
    first_name: "Ana",
    last_name: "Full",
    email: "ana@example.com",
    phone: "5557654321",
    birthdate: "1991-02-03",
    has_ssn: true,
    employment: "employed",
    income: 90000,
  },
  screening: { result: "approved" },
  lease: { move_in: "2026-02-01", end: "2027-01-31", rent: 200000, deposit: 250000 },
  terms_accepted_at: "2025-01-15T10:30:00Z",
  members: [],
})

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

    it.effect("ignores an event for an unknown building: no prospect, reason logged", () =>
      Effect.gen(function* () {
        const source = "act-unknown"
        const setUp = yield* ingestSetUp("org-act-unknown", source)
        const unknown = yield* send(
          setUp,
          envelope(
            source,
            prospectUpdate("p-unknown", "2026-01-10T12:00:00Z", { property: { code: "nope-1" } }),
          ),
        )
        // A building of an owner not granted to this client is unknown to it too.
        const stranger = yield* provisionedOwner(setUp.partner, "org-act-unknown-2")
        yield* renameBuilding(setUp, stranger, "pms-prop-2")
        const notGranted = yield* send(
          setUp,
          envelope(
            source,
            prospectUpdate("p-stranger", "2026-01-10T12:00:00Z", { property: { code: "pms-prop-2" } }),
          ),
        )
        const log = yield* awaitLogged(source, [unknown, notGranted])
        assert.deepStrictEqual(
          log.map((r) => [r.event_id, r.outcome, r.reason, r.source_prospect_id, r.prospect_id]),
          [
            [unknown, "ignored", "unknown pms_property_id nope-1", "p-unknown", null],
            [notGranted, "ignored", "unknown pms_property_id pms-prop-2", "p-stranger", null],
          ],
        )
        assert.deepStrictEqual(yield* prospectRows(source, "p-unknown"), [])
        assert.deepStrictEqual(yield* prospectRows(source, "p-stranger"), [])
        const answer = yield* getProspect(setUp.partner, setUp.slug, source, "p-unknown")
        assert.strictEqual(answer.status, 404, answer.text)
      }),
    )

    it.effect("ignores a malformed phone: no prospect, and an existing prospect is left as it was", () =>
      Effect.gen(function* () {
        const source = "act-phone"
        const setUp = yield* ingestSetUp("org-act-phone", source)
        const badPhone = (id: string, at: string) =>
          envelope(
            source,
            prospectUpdate(id, at, {
              applicant: {
                first_name: "Bad",
                last_name: "Roe",
                email: "jane@example.com",
                phone: "+1 555-123-4567",
              },
            }),
          )
        const fresh = yield* send(setUp, badPhone("p-phone-new", "2026-01-10T12:00:00Z"))
        const good = yield* send(
          setUp,
          envelope(source, prospectUpdate("p-phone-old", "2026-01-10T10:00:00Z")),
        )
        yield* awaitLogged(source, [good])
        const before = (yield* prospectRows(source, "p-phone-old"))[0]!
        const update = yield* send(setUp, badPhone("p-phone-old", "2026-01-10T12:00:00Z"))
        const log = yield* awaitLogged(source, [fresh, update])
        assert.deepStrictEqual(
          log.map((r) => [r.event_id, r.outcome, r.reason]),
          [
            [fresh, "ignored", "Phone is not valid"],
            [good, "applied", null],
            [update, "ignored", "Phone is not valid"],
          ],
        )
        assert.deepStrictEqual(yield* prospectRows(source, "p-phone-new"), [])
        // Not written, and its time not taken either: an event older than the refused one still applies.
        assert.deepStrictEqual(yield* prospectRows(source, "p-phone-old"), [before])
        const later = yield* send(
          setUp,
          envelope(
            source,
            prospectUpdate("p-phone-old", "2026-01-10T11:00:00Z", {
              applicant: {
                first_name: "Fixed",
                last_name: "Roe",
                email: "jane@example.com",
                phone: "5550001111",
              },
            }),
          ),
        )
        assert.strictEqual((yield* logOf(source, later)).outcome, "applied")
        const [row] = yield* prospectRows(source, "p-phone-old")
        assert.strictEqual(row!.phone, "5550001111")
      }),
    )

    it.effect("ignores an event type with no mapping, and events missing a mapped id or time", () =>
      Effect.gen(function* () {
        const source = "act-unmapped"
        const setUp = yield* ingestSetUp("org-act-unmapped", source)
        const unmapped = yield* send(
          setUp,
          envelope(source, prospectUpdate("p-unmapped", "2026-01-10T12:00:00Z"), "ProspectDeleted"),
        )
        const noId = yield* send(
          setUp,
          envelope(source, { ...prospectUpdate("x", "2026-01-10T12:00:00Z"), id: null }),
        )
        const noProperty = yield* send(
          setUp,
          envelope(source, prospectUpdate("p-no-property", "2026-01-10T12:00:00Z", { property: {} })),
        )
        const badTime = yield* send(setUp, envelope(source, prospectUpdate("p-bad-time", "yesterday")))
        const log = yield* awaitLogged(source, [unmapped, noId, noProperty, badTime])
        const byId = (id: string) => log.find((r) => r.event_id === id)!
        assert.deepInclude(byId(unmapped), {
          event_type: "ProspectDeleted",
          outcome: "ignored",
          reason: `no mapping for event type ProspectDeleted on source ${source}`,
          prospect_id: null,
        })
        assert.deepInclude(byId(noId), {
          outcome: "ignored",
          reason: "payload has no source_prospect_id at /id",
          source_prospect_id: null,
        })
        assert.deepInclude(byId(noProperty), {
          outcome: "ignored",
          reason: "payload has no pms_property_id at /property/code",
          source_prospect_id: "p-no-property",
        })
        assert.deepInclude(byId(badTime), {
          outcome: "ignored",
          reason: "payload has no a timestamp occurred_at at /updated_at",
          source_prospect_id: "p-bad-time",
          occurred_at: null,
        })
        assert.strictEqual(log.length, 4)
        for (const id of ["p-unmapped", "p-no-property", "p-bad-time", "x"]) {
          assert.deepStrictEqual(yield* prospectRows(source, id), [], id)
        }
      }),
    )

    it.effect(
      "ignores a building several granted owners have, and a key another owner's prospect holds",
      () =>
        Effect.gen(function* () {
          const source = "act-owners"
          const setUp = yield* ingestSetUp("org-act-owners", source)
          // A second owner with a building of the same PMS id, and a third with a building of its own.
          const second = yield* provisionedOwner(setUp.partner, "org-act-owners-2")
          const third = yield* provisionedOwner(setUp.partner, "org-act-owners-3")
          yield* renameBuilding(setUp, third, "pms-prop-3")
          const client = yield* ingestClient(source, [setUp.slug, second, third])
          const both = { ...setUp, client }
          const ambiguous = yield* send(
            both,
            envelope(source, prospectUpdate("p-ambiguous", "2026-01-10T12:00:00Z")),
          )

          // The REST API created p-taken for the first owner; an event naming the third owner's building is refused.
          const rest = yield* postProspect(setUp.partner, setUp.slug, completeProspect(source, "p-taken"))
          assert.strictEqual(rest.body.status_code, 201, rest.text)
          const taken = yield* send(
            both,
            envelope(
              source,
              prospectUpdate("p-taken", "2026-01-10T12:00:00Z", { property: { code: "pms-prop-3" } }),
            ),
          )
          const log = yield* awaitLogged(source, [ambiguous, taken])
          assert.deepStrictEqual(outcomes(log), [
            [
              ambiguous,
              "ignored",
              `pms_property_id pms-prop-1 is a building of several owners (${[setUp.slug, second].sort().join(", ")})`,
            ],
            [taken, "ignored", "Source prospect id is already used by another property owner's prospect"],
          ])
          assert.deepStrictEqual(yield* prospectRows(source, "p-ambiguous"), [])
          const rows = yield* prospectRows(source, "p-taken")
          assert.strictEqual(rows.length, 1)
          assert.strictEqual(rows[0]!.first_name, "John", "the refused event changed the prospect")
        }),
    )

    it.effect(
      "makes an ingested prospect and a REST prospect with the same key one record, event first",
      () =>
        Effect.gen(function* () {
          const source = "act-event-first"
          const setUp = yield* ingestSetUp("org-act-event-first", source)
          const eventId = yield* send(
            setUp,
            envelope(source, prospectUpdate("p-one", "2026-01-10T12:00:00Z")),
          )
          const logged = yield* logOf(source, eventId)
          assert.strictEqual(logged.outcome, "applied")
          const rest = yield* postProspect(
            setUp.partner,
            setUp.slug,
            completeProspect(source, "p-one", { first_name: undefined, email: undefined }),
          )
          assert.strictEqual(rest.status, 200, rest.text)
          assert.strictEqual(rest.body.status_code, 200, "the REST POST created a second prospect")
          assert.strictEqual(String(rest.body.prospect.id), logged.prospect_id)
          // The event's fields stay where the REST POST omitted them.
          assert.strictEqual(rest.body.prospect.first_name, "Jane")
          assert.strictEqual(rest.body.prospect.email, "jane@example.com")
          assert.strictEqual(rest.body.prospect.last_name, "Doe")
          const rows = yield* prospectRows(source, "p-one")
          assert.strictEqual(rows.length, 1)
          assert.strictEqual(rows[0]!.version, 2)
          const ready = yield* awaitProspect(setUp.partner, setUp.slug, source, "p-one")
          assert.strictEqual(ready.id, rest.body.prospect.id)
        }),
    )

    it.effect("makes a REST prospect and an ingested prospect with the same key one record, REST first", () =>
      Effect.gen(function* () {
        const source = "act-rest-first"
        const setUp = yield* ingestSetUp("org-act-rest-first", source)
        const rest = yield* postProspect(setUp.partner, setUp.slug, completeProspect(source, "p-one"))
        assert.strictEqual(rest.body.status_code, 201, rest.text)
        const eventId = yield* send(setUp, envelope(source, prospectUpdate("p-one", "2026-01-10T12:00:00Z")))
        const logged = yield* logOf(source, eventId)
        assert.strictEqual(logged.outcome, "applied")
        assert.strictEqual(logged.prospect_id, String(rest.body.prospect.id))
        const rows = yield* prospectRows(source, "p-one")
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]!.version, 2)
        assert.strictEqual(rows[0]!.first_name, "Jane")
        assert.strictEqual(rows[0]!.lease_start_date, "2026-03-01")
        const shown = yield* awaitProspect(
          setUp.partner,
          setUp.slug,
          source,
          "p-one",
          (p) => p.first_name === "Jane",
        )
        // Fields the event does not map keep the REST values.
        assert.strictEqual(shown.birthdate, "1990-05-15")
        assert.strictEqual(shown.monthly_rent_cents, 200000)
        const created = (yield* readStream("EVENTS")).filter(
          (m) =>
            m.subject === `events.${setUp.slug}.prospect.created` &&
            (m.json as { data: { third_party_prospect: { id: string } } }).data.third_party_prospect.id ===
              "p-one",
        )
        assert.strictEqual(created.length, 1, "one prospect.created for the one record")
      }),
    )

    it.effect("takes an ingested prospect through eligibility as the REST API does", () =>
      Effect.gen(function* () {
        const source = "act-eligible"
        const setUp = yield* ingestSetUp("org-act-eligible", source, FULL_MAPPING)
        const eventId = yield* send(setUp, envelope(source, fullPayload("p-full", "2026-01-10T12:00:00Z")))
        assert.strictEqual((yield* logOf(source, eventId)).outcome, "applied")
        const ready = yield* awaitProspect(setUp.partner, setUp.slug, source, "p-full")
        assert.deepInclude(ready, {
          status: "ready",
          first_name: "Ana",
          lease_start_date: "2026-02-01",
          pms_unit_id: "pms-unit-1",
        })
        assert.isString(ready.enrollment_url)
        assert.include(
          ready.enrollment_url as string,
          `/enrollment/embedded/${setUp.slug}/${source}/p-full?email=`,
        )
        const events = yield* eventually(
          Effect.map(readStream("EVENTS"), (messages) =>
            messages
              .filter((m) => m.subject.startsWith(`events.${setUp.slug}.prospect.`))
              .map((m) => m.subject),
          ),
          (subjects) => subjects.includes(`events.${setUp.slug}.prospect.ready`),
        )
        assert.deepStrictEqual(events, [
          `events.${setUp.slug}.prospect.created`,
          `events.${setUp.slug}.prospect.ready`,
        ])
      }),
    )

    it.effect(
      "ignores a payload Postgres cannot store (NUL where the mapping does not look) like any rejected value",
      () =>
        Effect.gen(function* () {
          const source = "act-nul"
          const setUp = yield* ingestSetUp("org-act-nul", source)
          const eventId = yield* send(
            setUp,
            envelope(
              source,
              // A NUL in a mapped field is refused at the gateway already (422); elsewhere it reaches the actor.
              prospectUpdate("p-nul", "2026-01-10T12:00:00Z", { note: "Ja\u0000ne" }),
            ),
          )
          // Either a log record or a dead letter ends the wait; the contract wants the former.
          const settled = yield* eventually(
            Effect.all([
              ingestLog(source),
              query(
                (sql) =>
                  sql<Array<{ reason: string }>>`select reason from dead_letters where actor = 'ingest'`,
              ).pipe(Effect.map((rows) => rows.map((r) => r.reason))),
            ]),
            ([log, dead]) => log.length > 0 || dead.length > 0,
          )
          const [log, dead] = settled
          assert.strictEqual(
            dead.length,
            0,
            `the event was dead-lettered instead of logged: ${dead.join("; ")}`,
          )
          assert.strictEqual(log[0]!.event_id, eventId)
          assert.strictEqual(log[0]!.outcome, "ignored")
          assert.deepStrictEqual(yield* prospectRows(source, "p-nul"), [])
        }),
      60_000,
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  awaitLogged,
  envelope,
  ingestClient,
  ingestLog,
  ingestSetUp,
  logOf,
  outcomes,
  prospectRows,
  prospectUpdate,
  renameBuilding,
  send,
} from "../support/Ingest.ts"
import {
  completeProspect,
  getProspect,
  postProspect,
  prospectService,
  provisionedOwner,
} from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

const service = prospectService()

describe("ingest actor: events it ignores", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
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
        assert.sameDeepMembers(
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
        // Two prospects, so possibly two partitions: the log's order between them is not defined.
        assert.sameDeepMembers(
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

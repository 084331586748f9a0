import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  envelope,
  FULL_MAPPING,
  fullPayload,
  ingestSetUp,
  logOf,
  prospectRows,
  prospectUpdate,
  send,
} from "../support/Ingest.ts"
import {
  awaitProspect,
  completeProspect,
  LEASE,
  postProspect,
  prospectService,
} from "../support/Prospects.ts"
import { eventually, readStream } from "../support/Streams.ts"

const service = prospectService()

describe("ingest actor: ingested and REST prospects", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 60_000 })((it) => {
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
          lease_start_date: LEASE.start,
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
  })
})

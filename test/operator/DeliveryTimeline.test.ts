import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { EventNames } from "../../backend/events/Catalog.ts"
import { Deliveries } from "../../backend/operator/DeliveryQueries.ts"
import type { TimelineStep } from "../../backend/operator/Api.ts"
import { enrollmentService } from "../support/Enrollment.ts"
import { envelope, FULL_MAPPING, fullPayload, ingestSetUp, logOf, send } from "../support/Ingest.ts"
import { awaitDeliveries, lifecycleOwner } from "../support/Lifecycle.ts"
import { completeProspect, postProspect } from "../support/Prospects.ts"
import { startReceiver } from "../support/Receiver.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"
import { createEndpoint } from "../support/Webhooks.ts"

// The partner API and the ingestion gateway take the prospect; the workers route and deliver its events.
const service = enrollmentService({ ROLES: "partner-api,ingest-api,workers" })
const testLayer = Deliveries.layer.pipe(Layer.provideMerge(service.layer))

/**
 * The timeline of the delivery the receiver got as `deliveryId`, once its outcome is recorded: the receiver holds
 * the request before the engine has written what its response was.
 */
const timelineOf = (deliveryId: string) =>
  eventually(
    Deliveries.use((deliveries) => deliveries.detail(deliveryId)).pipe(
      Effect.orDie,
      Effect.map((detail) => detail.timeline),
    ),
    (timeline) => timeline.find((s) => s.step === "delivered")?.at != null,
  )

/** Every step has a time, none before the step ahead of it, and each gap is the difference of the two times. */
const assertComplete = (timeline: ReadonlyArray<TimelineStep>) => {
  assert.deepStrictEqual(
    timeline.map((s) => s.step),
    ["accepted", "committed", "published", "routed", "attempted", "delivered"],
  )
  timeline.forEach((step, i) => {
    assert.isNotNull(step.at, step.step)
    if (i === 0) return assert.isNull(step.after_ms)
    const gap = Date.parse(step.at!) - Date.parse(timeline[i - 1]!.at!)
    assert.strictEqual(step.after_ms, gap, step.step)
    assert.isAtLeast(gap, 0, step.step)
  })
  return Object.fromEntries(timeline.map((s) => [s.step, Date.parse(s.at!)]))
}

describe("a delivery's timeline, from the partner's request to the webhook", () => {
  layer(testLayer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "dates every step of a POSTed prospect's events; prospect.ready, decided later, keeps the POST's acceptance",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const owner = yield* lifecycleOwner(receiver, "org-timeline-rest", "timeline-rest", "/t")
          const before = Date.now()
          const posted = yield* postProspect(
            owner.partner,
            owner.slug,
            completeProspect(owner.source, "renter"),
          )
          const answered = Date.now()
          assert.strictEqual(posted.status, 200, posted.text)
          const received = yield* awaitDeliveries(
            receiver,
            "/t",
            (r) =>
              r.some((d) => d.event === "prospect.ready") && r.some((d) => d.event === "prospect.created"),
          )
          const created = assertComplete(
            yield* timelineOf(received.find((d) => d.event === "prospect.created")!.deliveryId),
          )
          const ready = assertComplete(
            yield* timelineOf(received.find((d) => d.event === "prospect.ready")!.deliveryId),
          )
          // Accepted while the POST was being answered; both events date from it.
          assert.isAtLeast(created.accepted!, before)
          assert.isAtMost(created.accepted!, answered)
          assert.strictEqual(ready.accepted, created.accepted)
          // prospect.created was written by the POST itself, prospect.ready by the eligibility decision after it.
          assert.isAtMost(created.committed!, answered)
          assert.isAbove(ready.committed!, created.committed!)
        }).pipe(Effect.scoped),
    )

    it.effect("dates an ingested prospect's events from when the ingestion gateway received the event", () =>
      Effect.gen(function* () {
        const receiver = yield* startReceiver
        const source = "timeline-ingest"
        const setUp = yield* ingestSetUp("org-timeline-ingest", source, FULL_MAPPING)
        yield* createEndpoint(setUp.partner, `/partners/${setUp.slug}/webhooks/endpoints`, {
          name: "every event",
          destination_url: receiver.url("/i"),
          events: EventNames,
        })
        const eventId = yield* send(setUp, envelope(source, fullPayload("renter", "2026-01-10T12:00:00Z")))
        assert.strictEqual((yield* logOf(source, eventId)).outcome, "applied")
        const [logged] = yield* query(
          (sql) => sql<Array<{ received_at: Date }>>`
            select received_at from ingest_log where event_id = ${eventId}`,
        )
        const received = yield* awaitDeliveries(receiver, "/i", (r) =>
          r.some((d) => d.event === "prospect.ready"),
        )
        for (const event of ["prospect.created", "prospect.ready"]) {
          const steps = assertComplete(yield* timelineOf(received.find((d) => d.event === event)!.deliveryId))
          assert.strictEqual(steps.accepted, logged!.received_at.getTime(), event)
        }
      }).pipe(Effect.scoped),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { eventually } from "../support/Streams.ts"
import {
  awaitDeliveries,
  enginePlatform,
  examplePayload,
  publishEvent,
  query,
  receiverEndpoint,
  workerProcess,
} from "../support/WebhookEngine.ts"

const platform = enginePlatform()
const EVENT = "policy_application.quoted"

/** The router's checkpoint in `consumer_checkpoints`, once there is one. */
const checkpoint = (stream: string) =>
  query(
    (sql) => sql<Array<{ seq: number }>>`
      select stream_seq::int as seq from consumer_checkpoints
      where stream = ${stream} and consumer = 'webhook_router_p0'`,
  ).pipe(Effect.map(([row]) => row?.seq))

describe("the router's checkpoints", () => {
  layer(platform.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "a router starting over a database that lost its last commits routes again the events past the checkpoint, once each",
      () =>
        Effect.gen(function* () {
          const nats = yield* Nats
          const stream = nats.streamName("EVENTS")
          const { receiver, owner, endpointId } = yield* receiverEndpoint("acme-checkpoint", "/hook", [EVENT])
          const first = yield* workerProcess(platform.env)
          const events = yield* Effect.forEach(Array.from({ length: 6 }), () =>
            publishEvent(EVENT, owner.slug, examplePayload(EVENT)),
          )
          const routed = yield* awaitDeliveries(
            endpointId,
            (rows) => rows.length === 6 && rows.every((r) => r.status === "delivered"),
          )
          const last = events.at(-1)!.seq
          yield* eventually(checkpoint(stream), (seq) => seq !== undefined && seq >= last)
          yield* first.signal("SIGKILL")
          yield* first.exited

          // What a failover to a standby that missed the last commits leaves: the checkpoint that survived is at
          // the third event, and the deliveries of the three after it are gone. The first event's delivery is gone
          // too, below the checkpoint: only what lies past the checkpoint is read back, so it stays gone.
          const lost = [events[0]!, ...events.slice(3)].map((e) => e.eventId)
          yield* query(
            (sql) => sql`
              with gone as (delete from webhook_attempts where delivery_id in (
                select id from webhook_deliveries where event_id = any(${lost}::text[])))
              delete from webhook_deliveries where event_id = any(${lost}::text[])`,
          )
          yield* query(
            (sql) => sql`
              update consumer_checkpoints set stream_seq = ${events[2]!.seq}
              where stream = ${stream} and consumer = 'webhook_router_p0'`,
          )
          const receivedBefore = receiver.received("/hook").length

          yield* workerProcess(platform.env)
          const after = yield* awaitDeliveries(
            endpointId,
            (rows) => rows.length >= 5 && rows.every((r) => r.status === "delivered"),
          )
          assert.sameMembers(
            after.map((r) => r.event_id),
            events.slice(1).map((e) => e.eventId),
            "the events past the checkpoint routed again; the one below it not",
          )
          assert.strictEqual(
            new Set(after.map((r) => r.event_id)).size,
            after.length,
            "one delivery an event",
          )
          const kept = new Map(routed.map((r) => [r.event_id, r.id]))
          for (const e of events.slice(1, 3))
            assert.strictEqual(
              after.find((r) => r.event_id === e.eventId)!.id,
              kept.get(e.eventId),
              "a delivery that survived is left as it was",
            )
          yield* eventually(
            Effect.sync(() => receiver.received("/hook").length),
            (n) => n >= receivedBefore + 3,
          )
          assert.strictEqual(
            receiver.received("/hook").length,
            receivedBefore + 3,
            "each lost one sent again",
          )
          yield* eventually(checkpoint(stream), (seq) => seq !== undefined && seq >= last)
        }),
    )
  })
})

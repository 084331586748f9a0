import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { startReceiver } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import {
  awaitDeliveries,
  bothPulling,
  endpoint,
  enginePlatform,
  examplePayload,
  owner,
  publishEvent,
  subscriber,
  workerProcess,
} from "../support/WebhookEngine.ts"

const platform = enginePlatform({ WEBHOOK_TIMEOUT_MS: "2000" })

describe("webhook workers in two processes", () => {
  layer(platform.layer, { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect(
      "lose no delivery when a worker is killed in the middle of a burst; duplicates carry the same delivery id",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          const workers = yield* Effect.all([workerProcess(platform.env), workerProcess(platform.env)], {
            concurrency: "unbounded",
          })
          yield* bothPulling
          const acme = yield* owner("acme-burst")
          const sub = yield* subscriber({ ownerId: acme.id })
          const paths = ["/burst-a", "/burst-b"]
          const ids = []
          for (const path of paths) {
            ids.push(yield* endpoint(sub.id, receiver.url(path), ["policy_application.quoted"]))
            // Slow enough that both processes have requests in flight when one is killed.
            receiver.respond(path, (_, index) => ({ status: 200, delayMs: 20 + (index % 7) * 15 }))
          }
          const EVENTS = 150
          const payload = examplePayload("policy_application.quoted")
          const publishing = yield* Effect.forkChild(
            Effect.forEach(
              Array.from({ length: EVENTS }, (_, i) => i),
              () => publishEvent("policy_application.quoted", acme.slug, payload),
              { concurrency: 10 },
            ),
          )
          yield* eventually(
            Effect.sync(() => receiver.received().length),
            (n) => n >= 60,
          )
          // Answers held for a while, so both processes hold requests in flight when one is killed: those it held
          // are sent again by the other, and the duplicates below have something to compare.
          for (const path of paths) receiver.respond(path, () => ({ status: 200, delayMs: 1500 }))
          const holding = receiver.received().length
          yield* eventually(
            Effect.sync(() => receiver.received().length),
            (n) => n >= holding + 40,
          )
          yield* workers[0]!.signal("SIGKILL")
          yield* workers[0]!.exited
          for (const path of paths)
            receiver.respond(path, (_, index) => ({ status: 200, delayMs: 20 + (index % 7) * 15 }))
          yield* Fiber.join(publishing)

          const duplicated: Array<string> = []
          for (const [i, id] of ids.entries()) {
            const rows = yield* awaitDeliveries(
              id,
              (rows) => rows.length === EVENTS && rows.every((r) => r.status === "delivered"),
            )
            assert.strictEqual(new Set(rows.map((r) => r.event_id)).size, EVENTS)
            const requests = receiver.received(paths[i]!)
            const byDelivery = new Map<string, Array<Buffer>>()
            for (const request of requests) {
              const delivery = request.headers["x-webhook-delivery"] ?? ""
              byDelivery.set(delivery, [...(byDelivery.get(delivery) ?? []), request.body])
            }
            assert.sameMembers(
              [...byDelivery.keys()],
              rows.map((r) => r.id),
              `${paths[i]}: deliveries missing`,
            )
            for (const [delivery, bodies] of byDelivery) {
              if (bodies.length > 1) duplicated.push(delivery)
              for (const body of bodies)
                assert.isTrue(body.equals(bodies[0]!), `${delivery}: a duplicate differs`)
            }
          }
          // The killed worker had requests in flight, sent again by the other: else no duplicate was compared.
          assert.isNotEmpty(duplicated, "no delivery was sent twice")
          assert.isTrue(yield* workers[1]!.groupRunning, "the surviving worker ended")
        }).pipe(Effect.scoped),
      180_000,
    )
  })
})

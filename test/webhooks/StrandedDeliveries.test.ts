import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, References } from "effect"
import { actorLayer } from "../../backend/platform/Actor.ts"
import { Crypto } from "../../backend/platform/Crypto.ts"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { RouterRepo } from "../../backend/webhooks/delivery/RouterRepo.ts"
import { EventRouter, routerActor } from "../../backend/webhooks/delivery/Router.ts"
import { freePort } from "../support/Net.ts"
import { privateNats, storeDir } from "../support/PrivateNats.ts"
import { startReceiver } from "../support/Receiver.ts"
import { isolationLayer } from "../support/TestPlatform.ts"
import {
  attemptsOf,
  awaitDeliveries,
  endpoint,
  engineEnv,
  examplePayload,
  owner,
  publishEvent,
  subscriber,
  workerProcess,
} from "../support/WebhookEngine.ts"

/** The event router alone: it records deliveries and publishes their attempt messages, which nothing consumes. */
const routerOnly = actorLayer(routerActor).pipe(
  Layer.provide(EventRouter.layer),
  Layer.provide(RouterRepo.layer),
)

describe("deliveries recorded whose attempt messages JetStream lost", () => {
  it.live(
    "are attempted by the workers once the messaging server is back, without waiting an hour",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        const first = yield* privateNats(port, yield* storeDir("stranded-nats-"))
        const env = engineEnv({ NATS_URL: `nats://127.0.0.1:${port}` })
        // The database and the connections live until the end, released before the servers are killed.
        const base = Crypto.layer.pipe(
          Layer.provideMerge(PlatformLayer),
          Layer.provideMerge(isolationLayer(env)),
          Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error")),
        )
        yield* Effect.gen(function* () {
          const receiver = yield* startReceiver
          const acme = yield* owner("acme-stranded")
          const sub = yield* subscriber({ ownerId: acme.id })
          const id = yield* endpoint(sub.id, receiver.url("/stranded"), ["move_out.initiated"])
          const EVENTS = 12
          yield* Effect.gen(function* () {
            yield* Effect.forEach(
              Array.from({ length: EVENTS }, (_, i) => i),
              () => publishEvent("move_out.initiated", acme.slug, examplePayload("move_out.initiated")),
            )
            yield* awaitDeliveries(id, (rows) => rows.length === EVENTS)
          }).pipe(Effect.provide(routerOnly))

          // Recorded in Postgres, announced on JetStream, not attempted: the server dies, and the one that takes
          // its place starts with nothing of what it held.
          yield* first.signal("SIGKILL")
          yield* first.exited
          yield* privateNats(port, yield* storeDir("stranded-nats-"))
          const pending = yield* awaitDeliveries(id, (rows) => rows.length === EVENTS)
          assert.deepStrictEqual(
            pending.map((r) => [r.status, r.attempt_number]),
            pending.map(() => ["pending", 1]),
          )
          assert.deepStrictEqual(receiver.received(), [])

          yield* workerProcess(env)
          const rows = yield* awaitDeliveries(id, (rows) => rows.every((r) => r.status === "delivered"))
          for (const row of rows) {
            assert.deepStrictEqual(
              (yield* attemptsOf(row.id)).map((a) => [a.attempt_number, a.status_code]),
              [[1, 200]],
            )
          }
          assert.strictEqual(receiver.received("/stranded").length, EVENTS)
        }).pipe(Effect.provide(base))
      }).pipe(Effect.scoped),
    150_000,
  )
})

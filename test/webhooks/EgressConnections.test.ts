import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Egress, ORIGIN_CONNECTIONS } from "../../backend/webhooks/delivery/Egress.ts"
import { startReceiver } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import { engineEnv } from "../support/WebhookEngine.ts"

const egressLayer = Egress.layer.pipe(
  Layer.provide(AppConfig.layerFrom(engineEnv({ WEBHOOK_TIMEOUT_MS: "1500" }))),
)

const body = new TextEncoder().encode("{}")

describe("egress connections per origin", () => {
  layer(egressLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "never has more requests open at a receiver that never answers than the connections of its origin",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          receiver.respond("/hangs", () => ({ status: 200, delayMs: 600_000 }))
          const egress = yield* Egress
          const url = receiver.url("/hangs")
          const wave = () =>
            Effect.forEach(
              Array.from({ length: ORIGIN_CONNECTIONS }),
              () => egress.post(url, { "content-type": "application/json" }, body),
              { concurrency: "unbounded" },
            )
          // The first wave holds every connection; the second waits in the pool behind it.
          const first = yield* Effect.forkChild(wave())
          yield* eventually(
            Effect.sync(() => receiver.open("/hangs").now),
            (n) => n === ORIGIN_CONNECTIONS,
          )
          const second = yield* Effect.forkChild(wave())
          const firstResults = yield* Fiber.join(first)
          // Every connection of the first wave dropped at once: a third wave arrives while the second is sent.
          const third = yield* Effect.forkChild(wave())
          yield* Fiber.join(second)
          yield* Fiber.join(third)
          assert.isTrue(firstResults.every((r) => r._tag === "NoResponse"))
          assert.isAtLeast(receiver.received("/hangs").length, ORIGIN_CONNECTIONS * 2)
          assert.isAtMost(receiver.open("/hangs").most, ORIGIN_CONNECTIONS)
        }).pipe(Effect.scoped),
      60_000,
    )
  })
})

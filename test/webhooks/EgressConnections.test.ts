import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Egress, ORIGIN_CONNECTIONS } from "../../backend/webhooks/delivery/Egress.ts"
import { NEVER, startReceiver } from "../support/Receiver.ts"
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
          // Requests reached the receiver after the first wave's connections dropped: how many of the second wave's
          // make it before their own deadline depends on how fast the new connections are made.
          assert.isAbove(receiver.received("/hangs").length, ORIGIN_CONNECTIONS)
          assert.isAtMost(receiver.open("/hangs").most, ORIGIN_CONNECTIONS)
        }).pipe(Effect.scoped),
      60_000,
    )
  })
})

// A longer deadline: each round's connections are made anew (a TLS handshake each), which a busy machine slows.
const slowerEgressLayer = Egress.layer.pipe(
  Layer.provide(AppConfig.layerFrom(engineEnv({ WEBHOOK_TIMEOUT_MS: "3000" }))),
)

describe("egress connections per origin, all dropping at once", () => {
  layer(slowerEgressLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect(
      "keeps to the connections of its origin when they all drop at once with more requests waiting behind them",
      () =>
        Effect.gen(function* () {
          const receiver = yield* startReceiver
          receiver.respond("/never", () => NEVER)
          const egress = yield* Egress
          const url = receiver.url("/never")
          // Three times the connections, each sender POSTing again as soon as its request has timed out: every
          // connection is aborted at its deadline together with the others, while requests wait for them.
          const ROUNDS = 3
          const results = yield* Effect.forEach(
            Array.from({ length: ORIGIN_CONNECTIONS * 3 }),
            () =>
              Effect.forEach(Array.from({ length: ROUNDS }), () =>
                egress.post(url, { "content-type": "application/json" }, body),
              ),
            { concurrency: "unbounded" },
          )
          assert.isTrue(results.flat().every((r) => r._tag === "NoResponse"))
          // Beyond the first round: requests reached the receiver after its first connections were aborted.
          assert.isAbove(receiver.received("/never").length, ORIGIN_CONNECTIONS)
          assert.isAtMost(receiver.open("/never").most, ORIGIN_CONNECTIONS)
          assert.isAtMost(receiver.connections().most, ORIGIN_CONNECTIONS)
        }).pipe(Effect.scoped),
      60_000,
    )
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, References } from "effect"
import { PlatformLayer } from "../../backend/Infrastructure.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { unavailableIn } from "../../backend/platform/Unavailable.ts"
import { freePort } from "../support/Net.ts"
import { privateNats, storeDir } from "../support/PrivateNats.ts"
import { isolationLayer } from "../support/TestPlatform.ts"
import { engineEnv } from "../support/WebhookEngine.ts"

describe("reads of JetStream's state while the server is away", () => {
  it.live(
    "die with DependencyUnavailable (nats), which the gateways answer with a 503, and answer again once it is back",
    () =>
      Effect.gen(function* () {
        const port = yield* Effect.promise(freePort)
        const server = yield* privateNats(port, yield* storeDir("nats-reads-"))
        const env = engineEnv({ NATS_URL: `nats://127.0.0.1:${port}` })
        const base = PlatformLayer.pipe(
          Layer.provideMerge(isolationLayer(env)),
          Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Error")),
        )
        yield* Effect.gen(function* () {
          const nats = yield* Nats
          const stream = nats.streamName("EVENTS")
          // While the server answers, each read does.
          assert.isTrue(yield* nats.streamExists(stream))
          const state = yield* nats.streamState(stream)
          assert.deepStrictEqual(yield* nats.readStored(stream, ">", new Date(0), state.lastSeq), [])

          yield* server.signal("SIGKILL")
          yield* server.exited
          const reads = {
            streamExists: nats.streamExists(stream),
            streamState: nats.streamState(stream),
            readStored: nats.readStored(stream, ">", new Date(0), state.lastSeq),
            streamReports: nats.streamReports,
          }
          for (const [name, read] of Object.entries(reads)) {
            const exit = yield* Effect.exit(read as Effect.Effect<unknown>)
            assert.isTrue(Exit.isFailure(exit), name)
            if (Exit.isFailure(exit)) assert.strictEqual(unavailableIn(exit.cause)?.dependency, "nats", name)
          }

          // A server back on the port (empty: nothing of the first one's store) answers again.
          yield* privateNats(port, yield* storeDir("nats-reads-"))
          // Unavailable until the client has reconnected, then an answer: the stream is not there yet.
          let exists = yield* Effect.exit(nats.streamExists(stream))
          while (Exit.isFailure(exists)) {
            assert.strictEqual(unavailableIn(exists.cause)?.dependency, "nats")
            yield* Effect.sleep("200 millis")
            exists = yield* Effect.exit(nats.streamExists(stream))
          }
          assert.deepStrictEqual(exists, Exit.succeed(false))
          yield* nats.ensureStreams
          assert.strictEqual((yield* nats.streamState(stream)).lastSeq, 0)
        }).pipe(Effect.provide(base))
      }).pipe(Effect.scoped),
    120_000,
  )
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ack, type ActorDefinition } from "../../backend/platform/ActorDefinition.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { ackPending, definition, runtime, send, type Step } from "../support/Actors.ts"
import { eventually } from "../support/Streams.ts"
import { testPlatform } from "../support/TestPlatform.ts"

describe("Actor", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect("handles up to `concurrency` messages of a partition at once", () =>
      Effect.gen(function* () {
        let running = 0
        let maxRunning = 0
        const handled: Array<number> = []
        const actor: ActorDefinition<Step, never> = {
          ...definition("concurrent", (step) =>
            Effect.gen(function* () {
              running++
              maxRunning = Math.max(maxRunning, running)
              yield* Effect.sleep("100 millis")
              running--
              handled.push(step.n)
              return ack
            }),
          ),
          concurrency: 4,
        }
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actor)
            // One key: every message in one partition.
            for (let n = 0; n < 12; n++) yield* send("concurrent", "k", { key: "k", n })
            yield* eventually(
              Effect.sync(() => handled.length),
              (n) => n === 12,
            )
          }),
        )
        assert.strictEqual(maxRunning, 4)
        assert.deepStrictEqual(
          [...handled].sort((a, b) => a - b),
          Array.from({ length: 12 }, (_, n) => n),
        )
      }),
    )

    it.effect(
      "concurrency mode: pulls a backlog several messages at a time; two runtimes share it and one stopping leaves nothing waiting",
      () =>
        Effect.gen(function* () {
          const handled: Array<number> = []
          let running = 0
          let maxRunning = 0
          const actor: ActorDefinition<Step, never> = {
            ...definition("concurrentstop", (step) =>
              Effect.gen(function* () {
                running++
                maxRunning = Math.max(maxRunning, running)
                yield* Effect.sleep("100 millis")
                running--
                handled.push(step.n)
                return ack
              }),
            ),
            concurrency: 16,
          }
          // One key: every message in one partition, waiting before any runtime starts.
          for (let n = 0; n < 200; n++) yield* send("concurrentstop", "k", { key: "k", n })
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* runtime(actor)
              yield* runtime(actor)
              yield* eventually(
                Effect.sync(() => handled.length),
                (n) => n >= 40,
              )
              // Both scopes close here, with messages in hand and a backlog behind them.
            }),
          )
          // The consumer's `max_ack_pending` bounds both runtimes together.
          assert.strictEqual(maxRunning, 16)
          // Whatever the stopped runtimes held was settled or handed back: none waits out the 30 s ack wait.
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* runtime(actor)
              yield* eventually(
                Effect.sync(() => new Set(handled).size),
                (n) => n === 200,
              ).pipe(Effect.timeout("10 seconds"))
            }),
          )
          assert.deepStrictEqual(
            [...new Set(handled)].sort((a, b) => a - b),
            Array.from({ length: 200 }, (_, n) => n),
          )
          assert.strictEqual(yield* ackPending("concurrentstop"), 0)
        }),
    )

    it.effect("hands the handler the message's exact bytes (`raw`)", () =>
      Effect.gen(function* () {
        const raws: Array<Uint8Array> = []
        const actor: ActorDefinition<Step, never> = {
          ...definition("rawbytes", () => Effect.succeed(ack)),
          handle: (_step, delivery) => Effect.sync(() => (raws.push(delivery.raw), ack)),
        }
        // Not what JSON.stringify of the decoded message would give: spacing, key order, escapes, non-ASCII.
        const published = '{ "n" : 1.50, "key":"\\u00e9t\u00e9 – ok" }'
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actor)
            yield* send("rawbytes", "k", published)
            yield* eventually(
              Effect.sync(() => raws.length),
              (n) => n === 1,
            )
          }),
        )
        assert.deepStrictEqual(Buffer.from(raws[0]!), Buffer.from(published, "utf8"))
      }),
    )

    it.effect("takes a subject with no partition token with one consumer (`partitions: 0`)", () =>
      Effect.gen(function* () {
        const handled: Array<string> = []
        const actor: ActorDefinition<Step, never> = {
          ...definition("unpartitioned", (step, _count) => Effect.sync(() => (handled.push(step.key), ack))),
          subject: "eligibility.unpartitioned.*",
          partitions: 0,
        }
        const nats = yield* Nats
        const client = yield* NatsClient
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actor)
            for (const owner of ["a", "b", "c"]) {
              yield* nats.publish(
                nats.subject(`eligibility.unpartitioned.${owner}`),
                new TextEncoder().encode(JSON.stringify({ key: owner, n: 1 })),
              )
            }
            yield* eventually(
              Effect.sync(() => handled.length),
              (n) => n === 3,
            )
          }),
        )
        assert.deepStrictEqual(handled, ["a", "b", "c"])
        const info = yield* Effect.promise(() =>
          client.jsm.consumers.info(nats.streamName("ELIGIBILITY"), "unpartitioned_p0"),
        )
        assert.strictEqual(info.config.filter_subject, nats.subject("eligibility.unpartitioned.*"))
      }),
    )

    it.effect(
      "reads a whole stream with an unfiltered consumer; one made filtered before keeps its filter",
      () =>
        Effect.gen(function* () {
          const handled: Array<string> = []
          const wholeStream = (name: string): ActorDefinition<Step, never> => ({
            ...definition(name, (step, _count) => Effect.sync(() => (handled.push(step.key), ack))),
            stream: "ROSTER",
            subject: "roster.>",
            partitions: 0,
          })
          const nats = yield* Nats
          const client = yield* NatsClient
          const stream = nats.streamName("ROSTER")
          // As an earlier version made it: filtered on the stream's whole subject.
          yield* nats.ensureConsumer({
            stream,
            name: "older_p0",
            filterSubject: nats.subject("roster.>"),
            ackWait: "30 seconds",
            maxAckPending: 1,
          })
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* runtime(wholeStream("whole"))
              yield* runtime(wholeStream("older"))
              for (const key of ["a", "b"]) {
                yield* nats.publish(
                  nats.subject(`roster.whole.${key}`),
                  new TextEncoder().encode(JSON.stringify({ key, n: 1 })),
                )
              }
              // Each actor reads every message of the stream.
              yield* eventually(
                Effect.sync(() => handled.length),
                (n) => n === 4,
              )
            }),
          )
          assert.deepStrictEqual(handled.toSorted(), ["a", "a", "b", "b"])
          const whole = yield* Effect.promise(() => client.jsm.consumers.info(stream, "whole_p0"))
          assert.isUndefined(whole.config.filter_subject)
          const older = yield* Effect.promise(() => client.jsm.consumers.info(stream, "older_p0"))
          assert.strictEqual(older.config.filter_subject, nats.subject("roster.>"))
        }),
    )
  })
})

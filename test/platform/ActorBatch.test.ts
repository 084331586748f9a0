import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import {
  ack,
  type ActorDefinition,
  type Delivered,
  type Outcome,
} from "../../backend/platform/ActorDefinition.ts"
import { registry } from "../../backend/platform/Observability.ts"
import { partitionOf } from "../../backend/platform/Partition.ts"
import {
  ackPending,
  deadLetters,
  definition,
  explainedWithin,
  PARTITIONS,
  partitionLeaders,
  runtime,
  send,
  type Step,
} from "../support/Actors.ts"
import { eventually } from "../support/Streams.ts"
import { testPlatform } from "../support/TestPlatform.ts"

describe("Actor", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    const batchActor = (
      name: string,
      handleBatch: (steps: ReadonlyArray<Delivered<Step>>) => Effect.Effect<ReadonlyArray<Outcome>>,
      handle: (step: Step, deliveryCount: number) => Effect.Effect<Outcome> = () => Effect.succeed(ack),
    ): ActorDefinition<Step, never> => ({
      ...definition(name, handle),
      batch: { size: 20, handle: handleBatch },
    })

    it.effect(
      "batch mode: two runtimes share the partitions and hand each key's messages over in order, several at a time",
      () =>
        Effect.gen(function* () {
          const keys = Array.from({ length: 12 }, (_, i) => `key-${i}`)
          const perKey = new Map<string, Array<number>>()
          const handledBy = new Map<string, number>()
          const inFlight = new Set<string>()
          let sameKeyOverlap = false
          let largest = 0
          const record = (instance: string, step: Step) => {
            perKey.set(step.key, [...(perKey.get(step.key) ?? []), step.n])
            handledBy.set(instance, (handledBy.get(instance) ?? 0) + 1)
          }
          const actorFor = (instance: string) =>
            batchActor(
              "batchorder",
              (items) =>
                Effect.gen(function* () {
                  const batchKeys = new Set(items.map((i) => i.message.key))
                  for (const key of batchKeys) if (inFlight.has(key)) sameKeyOverlap = true
                  for (const key of batchKeys) inFlight.add(key)
                  largest = Math.max(largest, items.length)
                  yield* Effect.sleep("20 millis")
                  for (const item of items) record(instance, item.message)
                  for (const key of batchKeys) inFlight.delete(key)
                  return items.map(() => ack)
                }),
              (step) =>
                Effect.sleep("20 millis").pipe(
                  Effect.andThen(Effect.sync(() => (record(instance, step), ack))),
                ),
            )
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* runtime(actorFor("a"))
              yield* runtime(actorFor("b"))
              // The first runtime took every partition; it lets go of half once it sees the second.
              yield* eventually(
                partitionLeaders,
                (leaders) => leaders.length === 2 && leaders.every((n) => n === 2),
              )
              for (let n = 0; n < 10; n++)
                yield* Effect.forEach(keys, (key) => send("batchorder", key, { key, n }))
              yield* eventually(
                Effect.sync(() => [...perKey.values()].reduce((sum, steps) => sum + steps.length, 0)),
                (total) => total >= keys.length * 10,
              )
            }),
          )
          for (const key of keys) assert.deepStrictEqual(perKey.get(key), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], key)
          assert.isFalse(sameKeyOverlap, "two batches held one key at once")
          assert.isAbove(largest, 1, "no batch held more than one message")
          assert.isAbove(handledBy.get("a") ?? 0, 0)
          assert.isAbove(handledBy.get("b") ?? 0, 0)
          assert.deepStrictEqual(yield* partitionLeaders, [], "a stopped runtime still leads a partition")
        }),
    )

    it.effect(
      "batch mode: handles a batch again one message at a time when it dies, so a poison message stays alone",
      () =>
        Effect.gen(function* () {
          // Each message handled alone: its step, the delivery it came in, and that delivery's bytes (one object
          // per message JetStream handed out).
          const singly: Array<{ n: number; delivery: number; raw: Uint8Array }> = []
          let attempts = 0
          const actor: ActorDefinition<Step, never> = {
            ...batchActor("batchpoison", (items) =>
              items.some((i) => i.message.n === 5)
                ? Effect.die("poison in the batch")
                : Effect.sync(() => {
                    for (const item of items)
                      singly.push({
                        n: item.message.n,
                        delivery: item.delivery.deliveryCount,
                        raw: item.delivery.raw,
                      })
                    return items.map(() => ack)
                  }),
            ),
            handle: (step, delivery) =>
              step.n === 5
                ? Effect.sync(() => attempts++).pipe(Effect.andThen(Effect.die("poison")))
                : Effect.sync(
                    () => (
                      singly.push({ n: step.n, delivery: delivery.deliveryCount, raw: delivery.raw }),
                      ack
                    ),
                  ),
            maxDefects: 2,
            // A redelivery JetStream loses to a pull that was ending comes back soon.
            ackWait: "5 seconds",
          }
          const good = [0, 1, 2, 3, 4, 6, 7, 8, 9]
          yield* Effect.scoped(
            Effect.gen(function* () {
              // Published before the actor starts, so the first batch holds all of them.
              yield* send("batchpoison", "k", "{not json")
              for (let n = 0; n < 10; n++) yield* send("batchpoison", "k", { key: "k", n })
              yield* runtime(actor)
              yield* eventually(
                Effect.all([deadLetters("batchpoison"), Effect.sync(() => new Set(singly.map((s) => s.n)))]),
                ([rows, handled]) => rows.length === 2 && good.every((n) => handled.has(n)),
              ).pipe(explainedWithin(() => ({ singly, attempts }), "batchpoison"))
            }),
          )
          // In stream order, the poison message never among them. A message handled again came again: an ack that
          // reached JetStream after the short ack wait (a loaded machine) leaves it to be redelivered, and nats-server
          // 2.9 was seen handing an acknowledged message out once more, counted from 1 (see the terminated message's
          // test in Actor.test.ts); never is one delivery handled twice.
          assert.deepStrictEqual([...new Set(singly.map((s) => s.n))], good)
          for (const [i, s] of singly.entries())
            if (singly.findIndex((t) => t.raw === s.raw) < i)
              assert.fail(`step ${s.n} handled twice in one delivery (${s.delivery})`)
          // Alone, it died until its delivery count reached `maxDefects` (a lost redelivery counts, unseen).
          assert.oneOf(attempts, [1, 2])
          const reasons = (yield* deadLetters("batchpoison")).map((r) => r.reason)
          assert.match(reasons[0]!, /^undecodable: /)
          assert.match(reasons[1]!, /handler died [23] times/)
          assert.include(
            yield* Effect.promise(() => registry.metrics()),
            'actor_failed_total{actor="batchpoison",reason="batch"}',
          )
        }),
    )

    it.effect(
      "batch mode: a batch with room waits its turn among `handling` batches and takes what arrived meanwhile",
      () =>
        Effect.gen(function* () {
          // Two keys on two partitions.
          const slow = "handling-slow"
          let gathering = "handling-0"
          for (let i = 1; partitionOf(gathering, PARTITIONS) === partitionOf(slow, PARTITIONS); i++) {
            gathering = `handling-${i}`
          }
          const batches: Array<{ key: string; steps: Array<number> }> = []
          const entered = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const actor: ActorDefinition<Step, never> = {
            ...definition("batchturns", (step) =>
              Effect.sync(() => (batches.push({ key: step.key, steps: [step.n] }), ack)),
            ),
            batch: {
              size: 5,
              handling: 1,
              handle: (items) =>
                Effect.gen(function* () {
                  batches.push({ key: items[0]!.message.key, steps: items.map((i) => i.message.n) })
                  if (items[0]!.message.key === slow) {
                    yield* Deferred.succeed(entered, undefined)
                    yield* Deferred.await(release)
                  }
                  return items.map(() => ack)
                }),
            },
          }
          yield* Effect.scoped(
            Effect.gen(function* () {
              // Published before the actor starts: one batch of two, with room for three more, takes the one turn.
              yield* send("batchturns", slow, { key: slow, n: 0 })
              yield* send("batchturns", slow, { key: slow, n: 1 })
              yield* runtime(actor)
              yield* Deferred.await(entered)
              // One message is pulled and waits its turn; three more arrive behind it meanwhile.
              yield* send("batchturns", gathering, { key: gathering, n: 0 })
              yield* eventually(ackPending("batchturns"), (pending) => pending === 3)
              for (let n = 1; n < 4; n++) yield* send("batchturns", gathering, { key: gathering, n })
              yield* eventually(ackPending("batchturns"), (pending) => pending === 6)
              assert.deepStrictEqual(batches, [{ key: slow, steps: [0, 1] }])
              yield* Deferred.succeed(release, undefined)
              yield* eventually(
                Effect.sync(() => batches.filter((b) => b.key === gathering).flatMap((b) => b.steps)),
                (steps) => steps.length === 4,
              )
            }),
          )
          // All four in one batch: the three that arrived while it waited were taken with the first.
          assert.deepStrictEqual(
            batches.filter((b) => b.key === gathering),
            [{ key: gathering, steps: [0, 1, 2, 3] }],
          )
        }),
    )

    it.effect(
      "batch mode: a runtime that stops mid-batch finishes it and leaves the rest to the next one",
      () =>
        Effect.gen(function* () {
          const handled: Array<number> = []
          const actor = batchActor(
            "batchstop",
            (items) =>
              Effect.gen(function* () {
                yield* Effect.sleep("200 millis")
                for (const item of items) handled.push(item.message.n)
                return items.map(() => ack)
              }),
            (step) =>
              Effect.sleep("200 millis").pipe(Effect.andThen(Effect.sync(() => (handled.push(step.n), ack)))),
          )
          for (let n = 0; n < 60; n++) yield* send("batchstop", "k", { key: "k", n })
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* runtime(actor)
              yield* eventually(
                Effect.sync(() => handled.length),
                (n) => n > 0,
              )
              // Scope closes here, with a batch in hand.
            }),
          )
          const before = handled.length
          assert.isBelow(before, 60)
          // Whatever the stopped runtime held was settled or handed back: none waits out the 30 s ack wait.
          yield* Effect.scoped(
            Effect.gen(function* () {
              yield* runtime(actor)
              yield* eventually(
                Effect.sync(() => handled.length),
                (n) => n >= 60,
              ).pipe(Effect.timeout("10 seconds"))
            }),
          )
          assert.deepStrictEqual(
            handled,
            Array.from({ length: 60 }, (_, n) => n),
            "a message was lost, repeated or handled out of order",
          )
        }),
    )
  })
})

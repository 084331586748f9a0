import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { ack, actorLayer, type ActorDefinition, nak, type Outcome } from "../../backend/platform/Actor.ts"
import { Db } from "../../backend/platform/Db.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { registry } from "../../backend/platform/Observability.ts"
import { partitionedSubject } from "../../backend/platform/Partition.ts"
import { eventually } from "../support/Streams.ts"
import { testPlatform } from "../support/TestPlatform.ts"

const Step = Schema.Struct({ key: Schema.String, n: Schema.Number })
type Step = typeof Step.Type

const PARTITIONS = 4

const definition = (
  name: string,
  handle: (step: Step, deliveryCount: number) => Effect.Effect<Outcome>,
): ActorDefinition<Step, never> => ({
  name,
  stream: "ELIGIBILITY",
  subject: `eligibility.${name}.*`,
  partitions: PARTITIONS,
  schema: Step,
  handle: (step, delivery) => handle(step, delivery.deliveryCount),
})

const send = (actor: string, key: string, body: unknown) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const data = new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body))
    yield* nats.publish(nats.subject(partitionedSubject(`eligibility.${actor}.owner`, key, PARTITIONS)), data)
  })

/** An actor runtime with a NATS connection of its own, as a second process would have. */
const runtime = (actor: ActorDefinition<Step, never>) =>
  Layer.build(actorLayer(actor).pipe(Layer.provide(Nats.layer)))

const deadLetters = (actor: string) =>
  Effect.gen(function* () {
    const db = yield* Db
    return yield* db.query(
      (sql) => sql<Array<{ reason: string; subject: string }>>`
        select reason, subject from dead_letters where actor = ${actor} order by id`,
    )
  })

const ackPending = (actor: string) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    let pending = 0
    for (let p = 0; p < PARTITIONS; p++) {
      const info = yield* Effect.promise(() =>
        nats.jsm.consumers.info(nats.streamName("ELIGIBILITY"), `${actor}_p${p}`),
      )
      pending += info.num_ack_pending + info.num_pending
    }
    return pending
  })

describe("Actor", () => {
  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect("two runtimes handle each key's messages in order and different keys concurrently", () =>
      Effect.gen(function* () {
        const keys = Array.from({ length: 16 }, (_, i) => `key-${i}`)
        const perKey = new Map<string, Array<number>>()
        const inFlight = new Set<string>()
        let running = 0
        let maxRunning = 0
        let sameKeyOverlap = false
        const handledBy = new Map<string, number>()
        const actorFor = (instance: string) =>
          definition("order", (step) =>
            Effect.gen(function* () {
              if (inFlight.has(step.key)) sameKeyOverlap = true
              inFlight.add(step.key)
              running++
              maxRunning = Math.max(maxRunning, running)
              yield* Effect.sleep("5 millis")
              perKey.set(step.key, [...(perKey.get(step.key) ?? []), step.n])
              handledBy.set(instance, (handledBy.get(instance) ?? 0) + 1)
              running--
              inFlight.delete(step.key)
              return ack
            }),
          )
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actorFor("a"))
            yield* runtime(actorFor("b"))
            for (let n = 0; n < 8; n++) yield* Effect.forEach(keys, (key) => send("order", key, { key, n }))
            yield* eventually(
              Effect.sync(() => [...perKey.values()].reduce((sum, steps) => sum + steps.length, 0)),
              (total) => total === keys.length * 8,
            )
          }),
        )
        for (const key of keys) assert.deepStrictEqual(perKey.get(key), [0, 1, 2, 3, 4, 5, 6, 7], key)
        assert.isFalse(sameKeyOverlap, "two handlers ran for one key at once")
        assert.isAbove(maxRunning, 1, "different keys never ran concurrently")
        assert.isAbove(handledBy.get("a") ?? 0, 0)
        assert.isAbove(handledBy.get("b") ?? 0, 0)
      }),
    )

    it.effect("redelivers a nak'd message no earlier than its delay", () =>
      Effect.gen(function* () {
        const deliveries: Array<{ at: number; count: number }> = []
        const actor = definition("retry", (_step, count) =>
          Effect.sync(() => {
            deliveries.push({ at: performance.now(), count })
            return count === 1 ? nak("400 millis") : ack
          }),
        )
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actor)
            yield* send("retry", "k", { key: "k", n: 1 })
            yield* eventually(
              Effect.sync(() => deliveries.length),
              (n) => n === 2,
            )
          }),
        )
        assert.deepStrictEqual(
          deliveries.map((d) => d.count),
          [1, 2],
        )
        assert.include(
          yield* Effect.promise(() => registry.metrics()),
          'actor_redelivered_total{actor="retry"} 1',
        )
        assert.isAtLeast(deliveries[1]!.at - deliveries[0]!.at, 400)
      }),
    )

    it.effect("terminates and records a message that does not decode, and goes on with the next", () =>
      Effect.gen(function* () {
        const handled: Array<Step> = []
        const actor = definition("poison", (step) => Effect.sync(() => (handled.push(step), ack)))
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actor)
            yield* send("poison", "k", "{not json")
            yield* send("poison", "k", { key: "k", n: "one" })
            yield* send("poison", "k", { key: "k", n: 2 })
            yield* eventually(
              Effect.sync(() => handled.length),
              (n) => n === 1,
            )
            yield* eventually(deadLetters("poison"), (rows) => rows.length === 2)
          }),
        )
        assert.deepStrictEqual(handled, [{ key: "k", n: 2 }])
        const rows = yield* deadLetters("poison")
        assert.match(rows[0]!.reason, /^undecodable: /)
        assert.match(rows[1]!.reason, /^undecodable: /)
        assert.strictEqual(rows[0]!.subject.startsWith("eligibility.poison.owner."), true)
        const exposition = yield* Effect.promise(() => registry.metrics())
        assert.include(exposition, 'actor_failed_total{actor="poison",reason="undecodable"} 2')
        assert.include(exposition, 'actor_handled_total{actor="poison",outcome="term"} 2')
        assert.include(exposition, 'actor_handled_total{actor="poison",outcome="ack"} 1')
      }),
    )

    it.effect("terminates and records a message whose handler keeps dying", () =>
      Effect.gen(function* () {
        let attempts = 0
        const actor: ActorDefinition<Step, never> = {
          ...definition("defect", () =>
            Effect.sync(() => attempts++).pipe(Effect.andThen(Effect.die("boom"))),
          ),
          maxDefects: 2,
        }
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actor)
            yield* send("defect", "k", { key: "k", n: 1 })
            yield* eventually(deadLetters("defect"), (rows) => rows.length === 1)
          }),
        )
        assert.strictEqual(attempts, 2)
        assert.match((yield* deadLetters("defect"))[0]!.reason, /handler died 2 times/)
      }),
    )

    it.effect("finishes in-flight work on shutdown", () =>
      Effect.gen(function* () {
        const started: Array<number> = []
        const finished: Array<number> = []
        const actor = definition("drain", (step) =>
          Effect.gen(function* () {
            started.push(step.n)
            yield* Effect.sleep("300 millis")
            finished.push(step.n)
            return ack
          }),
        )
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* runtime(actor)
            yield* send("drain", "k", { key: "k", n: 1 })
            yield* eventually(
              Effect.sync(() => started.length),
              (n) => n === 1,
            )
            // Scope closes here, with the handler still sleeping.
          }),
        )
        assert.deepStrictEqual(finished, [1])
        assert.strictEqual(yield* ackPending("drain"), 0)
      }),
    )
  })
})

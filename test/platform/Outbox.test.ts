import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Db } from "../../backend/platform/Db.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { Outbox, relayLayer, relayOnce, waves } from "../../backend/platform/Outbox.ts"
import { eventually, readStream } from "../support/Streams.ts"
import { testPlatform } from "../support/TestPlatform.ts"

const unsentCount = Effect.gen(function* () {
  const db = yield* Db
  const [row] = yield* db.query(
    (sql) => sql<Array<{ n: string }>>`select count(*) as n from outbox where sent_at is null`,
  )
  return Number(row?.n)
})

const enqueueCommitted = (subject: string, key: string, payload: unknown) =>
  Effect.gen(function* () {
    const db = yield* Db
    const outbox = yield* Outbox
    yield* db.transaction(outbox.enqueue([{ subject, key, payload }]))
  })

const eventsFor = (subjectPrefix: string) =>
  readStream("EVENTS").pipe(Effect.map((all) => all.filter((m) => m.subject.startsWith(subjectPrefix))))

describe("Outbox", () => {
  it("sends a key's next message only in the wave after its previous one", () => {
    const rows = ["a", "b", "a", "c", "a", "b"].map((key, seq) => ({ key, seq }))
    assert.deepStrictEqual(
      waves(rows).map((wave) => wave.map((r) => `${r.key}${r.seq}`)),
      [["a0", "b1", "c3"], ["a2", "b5"], ["a4"]],
    )
  })

  layer(testPlatform().layer, { excludeTestServices: true })((it) => {
    it.effect(
      "keeps a committed message when no relay ran, and publishes it exactly once after restart",
      () =>
        Effect.gen(function* () {
          yield* enqueueCommitted("events.crash.prospect.created", "p-1", { id: "p-1" })
          assert.strictEqual(yield* unsentCount, 1)
          assert.deepStrictEqual(yield* eventsFor("events.crash."), [])

          // The relay that starts after the crash finds the committed row and publishes it.
          yield* Effect.scoped(
            Layer.build(relayLayer()).pipe(Effect.andThen(eventually(unsentCount, (n) => n === 0))),
          )
          yield* relayOnce()
          const stored = yield* eventsFor("events.crash.")
          assert.strictEqual(stored.length, 1)
          assert.deepStrictEqual(stored[0]?.json, { id: "p-1" })
        }),
    )

    it.effect("stores a message once when a relay published it but died before marking it sent", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const nats = yield* Nats
        yield* enqueueCommitted("events.half.prospect.ready", "p-2", { id: "p-2" })
        const [row] = yield* db.query(
          (sql) =>
            sql<Array<{ id: string; payload: Buffer }>>`select id, payload from outbox where sent_at is null`,
        )
        assert.isDefined(row)
        // What the dead relay got as far as: the publish, with the outbox id as Nats-Msg-Id.
        yield* nats.publish(nats.subject("events.half.prospect.ready"), row!.payload, { msgID: row!.id })

        yield* relayOnce()
        const stored = yield* eventsFor("events.half.")
        assert.strictEqual(stored.length, 1)
        assert.strictEqual(stored[0]?.msgId, row!.id)
        assert.strictEqual(yield* unsentCount, 0)
      }),
    )

    it.effect("publishes nothing for a rolled-back transaction", () =>
      Effect.gen(function* () {
        const db = yield* Db
        const outbox = yield* Outbox
        const result = yield* db
          .transaction(
            outbox
              .enqueue([{ subject: "events.rollback.prospect.created", key: "p-3", payload: { id: "p-3" } }])
              .pipe(Effect.andThen(Effect.fail("validation failed" as const))),
          )
          .pipe(Effect.flip)
        assert.strictEqual(result, "validation failed")
        assert.isUndefined(yield* relayOnce())
        assert.strictEqual(yield* unsentCount, 0)
        assert.deepStrictEqual(yield* eventsFor("events.rollback."), [])
      }),
    )

    it.effect("prunes sent rows older than an hour and keeps newer ones", () =>
      Effect.gen(function* () {
        const db = yield* Db
        yield* db.query(
          (sql) => sql`
            insert into outbox (key, partition, subject, payload, sent_at) values
              ('k', 0, 'events.prune.old', '\\x7b7d', now() - interval '2 hours'),
              ('k', 0, 'events.prune.recent', '\\x7b7d', now() - interval '5 minutes')`,
        )
        const subjects = db
          .query(
            (sql) =>
              sql<Array<{ subject: string }>>`select subject from outbox where subject like 'events.prune.%'`,
          )
          .pipe(Effect.map((rows) => rows.map((r) => r.subject)))
        yield* Effect.scoped(
          Layer.build(relayLayer()).pipe(Effect.andThen(eventually(subjects, (s) => s.length === 1))),
        )
        assert.deepStrictEqual(yield* subjects, ["events.prune.recent"])
      }),
    )

    it.effect("keeps each key's order when one relay pass publishes several messages of many keys", () =>
      Effect.gen(function* () {
        const keys = Array.from({ length: 20 }, (_, i) => `b${i}`)
        for (let n = 0; n < 5; n++) {
          yield* Effect.forEach(keys, (key) => enqueueCommitted(`events.batch.${key}.step`, key, { key, n }))
        }
        while ((yield* relayOnce()) !== undefined) {
          /* drain every partition */
        }
        const stored = yield* eventsFor("events.batch.")
        assert.strictEqual(stored.length, 100)
        for (const key of keys) {
          const steps = stored
            .filter((m) => (m.json as { key: string }).key === key)
            .map((m) => (m.json as { n: number }).n)
          assert.deepStrictEqual(steps, [0, 1, 2, 3, 4], key)
        }
      }),
    )

    it.effect("publishes each key's messages in commit order while a relay runs", () =>
      Effect.gen(function* () {
        const keys = Array.from({ length: 12 }, (_, i) => `k${i}`)
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* Layer.build(relayLayer({ workers: 3 }))
            for (let n = 0; n < 10; n++) {
              yield* Effect.forEach(
                keys,
                (key) => enqueueCommitted(`events.order.${key}.step`, key, { key, n }),
                {
                  concurrency: 4,
                },
              )
            }
            yield* eventually(eventsFor("events.order."), (all) => all.length === keys.length * 10)
          }),
        )
        const stored = yield* eventsFor("events.order.")
        for (const key of keys) {
          const steps = stored
            .filter((m) => (m.json as { key: string }).key === key)
            .map((m) => (m.json as { n: number }).n)
          assert.deepStrictEqual(steps, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        }
      }),
    )
  })
})

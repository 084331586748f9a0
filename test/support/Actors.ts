import { Effect, Layer, Schema } from "effect"
import { NatsLayer } from "../../backend/Infrastructure.ts"
import { actorLayer } from "../../backend/platform/Actor.ts"
import type { ActorDefinition, Outcome } from "../../backend/platform/ActorDefinition.ts"
import { Db } from "../../backend/platform/Db.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { partitionedSubject } from "../../backend/platform/Partition.ts"

/**
 * What the actor runtime's tests share: an actor of \`Step\` messages on ELIGIBILITY over \`PARTITIONS\` partitions,
 * publishing to it, a second runtime, and what JetStream and Postgres hold for an actor.
 */
export const Step = Schema.Struct({ key: Schema.String, n: Schema.Number })
export type Step = typeof Step.Type

export const PARTITIONS = 4

export const definition = (
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

export const send = (actor: string, key: string, body: unknown) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const data = new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body))
    yield* nats.publish(nats.subject(partitionedSubject(`eligibility.${actor}.owner`, key, PARTITIONS)), data)
  })

/** An actor runtime with a NATS connection of its own, as a second process would have. */
export const runtime = (actor: ActorDefinition<Step, never>) =>
  Layer.build(actorLayer(actor).pipe(Layer.provide(NatsLayer)))

export const deadLetters = (actor: string) =>
  Effect.gen(function* () {
    const db = yield* Db
    return yield* db.query(
      (sql) => sql<Array<{ reason: string; subject: string }>>`
        select reason, subject from dead_letters where actor = ${actor} order by id`,
    )
  })

/** Each partition's consumer of `actor`, as JetStream reports it now. */
export const consumerInfos = (actor: string) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const client = yield* NatsClient
    return yield* Effect.forEach(
      Array.from({ length: PARTITIONS }, (_, p) => p),
      (p) =>
        Effect.promise(() => client.jsm.consumers.info(nats.streamName("ELIGIBILITY"), `${actor}_p${p}`)),
    )
  })

export const ackPending = (actor: string) =>
  Effect.map(consumerInfos(actor), (infos) =>
    infos.reduce((pending, info) => pending + info.num_ack_pending + info.num_pending, 0),
  )

/** How many partitions each session leads (batch mode's partition leases), in this database. */
export const partitionLeaders = Effect.gen(function* () {
  const db = yield* Db
  const rows = yield* db.query(
    (sql) => sql<Array<{ n: number }>>`
      select count(*)::int as n from pg_locks
      where locktype = 'advisory' and classid = 7239300 and granted
        and database = (select oid from pg_database where datname = current_database())
      group by pid order by pid`,
  )
  return rows.map((r) => r.n)
})

/**
 * Ends a wait that lasts beyond `seconds` (within the test's own timeout) with what the test saw and each partition's
 * consumer state, so a failure under load says which messages JetStream still holds for the actor.
 */
export const explainedWithin =
  (seen: () => unknown, actor: string, seconds = 40) =>
  <A, E, R>(wait: Effect.Effect<A, E, R>) =>
    Effect.timeoutOrElse(wait, {
      duration: `${seconds} seconds`,
      orElse: () =>
        Effect.gen(function* () {
          const consumers = (yield* consumerInfos(actor)).map((info, partition) => ({
            partition,
            delivered: info.delivered,
            ack_floor: info.ack_floor,
            ack_pending: info.num_ack_pending,
            pending: info.num_pending,
            redelivered: info.num_redelivered,
            waiting: info.num_waiting,
          }))
          const dead = yield* deadLetters(actor)
          const leaders = yield* partitionLeaders
          // The pool's connections by state: a lease renewal waiting for a connection none gives back shows here.
          const db = yield* Db
          const sessions = yield* db.query(
            (sql) => sql`
              select state, left(query, 80) as query, count(*)::int as n from pg_stat_activity
              where datname = current_database() and pid <> pg_backend_pid() group by 1, 2`,
          )
          return yield* Effect.die(
            new Error(
              `not done after ${seconds} s: ${JSON.stringify({ seen: seen(), dead, leaders, sessions, consumers })}`,
            ),
          )
        }),
    })

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

const ROWS = 20_000

const unsent = query(
  (sql) => sql<Array<{ n: number }>>`select count(*)::int as n from outbox where sent_at is null`,
).pipe(Effect.map(([row]) => row!.n))

describe("Postgres killed while outbox rows are pending", () => {
  layer(faultStackLayer(), { excludeTestServices: true, timeout: 180_000 })((it) => {
    it.effect(
      "pg_ctl stop -m immediate mid-relay: the relay logs its pause, resumes when Postgres is back, and publishes every row once",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          const nats = yield* Nats
          yield* Effect.addFinalizer(() => stack.restore)
          const roster = nats.streamName("ROSTER")
          const streamMessages = Effect.map(
            nats.streamReports,
            (streams) => streams.find((s) => s.name === roster)?.messages ?? 0,
          )
          const before = yield* streamMessages

          // Rows of many keys over every partition, committed at once with their wake-up, as a burst of requests
          // leaves them.
          yield* query(
            (sql) => sql`
              with written as (
                insert into outbox (key, partition, subject, payload)
                select 'relay-fault-' || (i % 500), i % 16, 'roster.relayfault.owner.created',
                       convert_to('{"n":' || i || '}', 'UTF8')
                from generate_series(1, ${ROWS}) as i
                returning 1
              )
              select pg_notify('outbox', '') from (select 1) once where exists (select 1 from written)`,
          )
          yield* stack.step(
            "the relay is publishing",
            eventually(unsent, (n) => n < ROWS),
          )
          yield* stack.step("pg_ctl stop -m immediate", stack.postgres.stop("immediate"))
          const pending = yield* Effect.map(streamMessages, (n) => ROWS - (n - before))
          yield* Effect.sleep("5 seconds")
          yield* stack.step("pg_ctl start", stack.postgres.start)

          const context = () => ({ workers: stack.workers().process.stdout().split("\n").slice(-20) })
          yield* stack.step(
            "the outbox empties",
            eventually(unsent, (n) => n === 0),
            { seconds: 90, context },
          )
          const published = yield* stack.step(
            "every row is on the stream",
            eventually(streamMessages, (n) => n - before === ROWS),
            { seconds: 30, context },
          )
          recordFigure("relay_rows_pending_at_kill", pending)
          recordFigure("relay_rows_published", published - before)
          yield* stack.assertAlive

          const logged = stack.workers().process.stdout()
          assert.match(logged, /"message":"outbox relay paused: a dependency is unavailable"/)
          assert.match(logged, /"message":"outbox relay resumed"/)
          assert.isBelow(
            logged.indexOf('"message":"outbox relay paused'),
            logged.lastIndexOf('"message":"outbox relay resumed"'),
          )
        }),
    )
  })
})

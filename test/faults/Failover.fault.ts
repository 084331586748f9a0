import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { prospectLoad } from "../support/FaultLoad.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import { type ReplicatedPostgres, replicatedPostgres } from "../support/PrivatePostgres.ts"
import { prospectSetUp } from "../support/Prospects.ts"
import { query } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"

/** How long the standby waits before its promote, as a managed Postgres takes to decide the primary is gone. */
const PROMOTE_AFTER = "5 seconds"

describe("a Postgres failover to a synchronous standby under load", () => {
  layer(faultStackLayer({ postgres: replicatedPostgres({ synchronous: true }) }), {
    excludeTestServices: true,
    timeout: 240_000,
  })((it) => {
    it.effect(
      "kill -9 of the primary, promote 5 s later: no 500, both processes keep running, every prospect answered 200 is stored",
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          const pair = stack.postgres as ReplicatedPostgres
          const source = "failover-sync"
          const { partner, slug } = yield* prospectSetUp("org-failover-sync", source)
          const load = yield* prospectLoad(partner, slug, source, { loops: 2, pauseMs: 100 })
          const context = () => ({ load: load.statuses() })
          yield* stack.step(
            "prospects accepted before the fault",
            eventually(
              Effect.sync(() => load.statuses().accepted ?? 0),
              (n) => n >= 20,
            ),
            { context },
          )

          const acceptedBefore = load.statuses().accepted ?? 0
          yield* stack.step("kill -9 of the primary's postmaster", pair.killPrimary)
          yield* Effect.sleep(PROMOTE_AFTER)
          yield* stack.step("promote the standby", pair.promoteStandby)
          const promoted = yield* Clock.currentTimeMillis
          yield* stack.step(
            "a prospect accepted after the promote",
            eventually(
              Effect.sync(() => load.acceptedSince(promoted)),
              (id) => id !== undefined,
            ),
            { context },
          )
          const acceptedAfter = yield* Clock.currentTimeMillis
          const firstAfterPromote = acceptedAfter - promoted
          // Ten more, so the pools' connections and the workers' leases are exercised on the new primary.
          const acceptedThen = load.statuses().accepted ?? 0
          yield* stack.step(
            "more prospects accepted on the new primary",
            eventually(
              Effect.sync(() => load.statuses().accepted ?? 0),
              (n) => n >= acceptedThen + 10,
            ),
            { context },
          )
          const report = yield* stack.step("load stopped", load.stop, { context })
          yield* stack.assertAlive

          const stored = yield* stack.step(
            "every accepted prospect read back from the new primary",
            query(
              (sql) => sql<Array<{ source_prospect_id: string }>>`
                select source_prospect_id from prospects where source = ${source}`,
            ),
          )
          const [served] = yield* query(
            (sql) => sql<Array<{ port: number; standby: boolean }>>`
            select current_setting('port')::int as port, pg_is_in_recovery() as standby`,
          )
          assert.deepStrictEqual(
            served,
            { port: pair.standbyPort, standby: false },
            "the promoted standby serves",
          )
          const storedIds = new Set(stored.map((row) => row.source_prospect_id))
          const missing = report.accepted.filter((id) => !storedIds.has(id))
          yield* recordFigure("failover synchronous: answers", report.statuses)
          yield* recordFigure("failover synchronous: accepted, stored, missing", {
            acceptedBeforeKill: acceptedBefore,
            firstAcceptedAfterPromoteMs: firstAfterPromote,
            accepted: report.accepted.length,
            stored: report.accepted.length - missing.length,
            missing: missing.length,
          })
          assert.deepStrictEqual(
            report.serverErrors,
            [],
            "no 5xx other than 503, and no request left unanswered",
          )
          assert.deepStrictEqual(missing, [], "every prospect answered 200 is stored")
        }),
    )
  })
})

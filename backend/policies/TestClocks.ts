import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { isoDate } from "../prospects/Eligibility.ts"
import { addDays, type TestClock, type TestClockAdvance, TestClockInvalid } from "./LifecycleDomain.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"

const DAY_MS = 86_400_000

/** An owner's clock may run at most a hundred years ahead. */
const MAX_OFFSET_DAYS = 36_500

/**
 * The dates policies live on. Every owner's policies are activated, charged and expired on the real date (UTC,
 * from Effect's `Clock`), except that in staging and development a partner may move its own owner's clock
 * forward (`POST /partners/{owner_slug}/test_clock/advance`) to see `policy.expired` and `delinquency.created`
 * arrive in minutes. Other owners' policies are untouched, and production never reads an offset.
 */
export class TestClocks extends Context.Service<TestClocks>()("partner-service/policies/TestClocks", {
  make: Effect.gen(function* () {
    const config = yield* AppConfig
    const db = yield* Db
    const repo = yield* LifecycleRepo
    const enabled = config.serviceEnv !== "production"

    /** The real date, UTC. */
    const realToday = Effect.map(Clock.currentTimeMillis, isoDate)

    const offsetOf = (ownerId: string) => (enabled ? repo.clockOffset(ownerId) : Effect.succeed(0))

    /** The date an owner's policies live on now. */
    const todayOf = Effect.fn("TestClocks.todayOf")(function* (ownerId: string) {
      return addDays(yield* realToday, yield* offsetOf(ownerId))
    })

    /** The instant on the owner's clock: now, as many days ahead as its clock runs (the date documents state). */
    const nowOf = Effect.fn("TestClocks.nowOf")(function* (ownerId: string) {
      return new Date((yield* Clock.currentTimeMillis) + (yield* offsetOf(ownerId)) * DAY_MS)
    })

    const view = (offset: number, today: string): TestClock => ({
      offset_days: offset,
      today: addDays(today, offset),
    })

    const ownerIdOf = (slug: string) =>
      Effect.flatMap(repo.ownerBySlug(slug), (owner) =>
        owner === undefined ? Effect.die(new Error(`no owner ${slug}`)) : Effect.succeed(owner.id),
      )

    /** The owner's clock (an owner that never advanced it is on the real date). */
    const show = Effect.fn("TestClocks.show")(function* (ownerSlug: string) {
      return view(yield* offsetOf(yield* ownerIdOf(ownerSlug)), yield* realToday)
    })

    /**
     * Moves the owner's clock `days` forward and wakes the lifecycle job in every worker, which then activates,
     * charges and expires that owner's policies as of the new date. Only where test clocks exist (the routes
     * are not served in production).
     */
    const advance = Effect.fn("TestClocks.advance")(function* (ownerSlug: string, input: TestClockAdvance) {
      if (!enabled) return yield* Effect.die(new Error("test clocks do not exist in production"))
      const ownerId = yield* ownerIdOf(ownerSlug)
      const offset = yield* db.transaction(
        Effect.gen(function* () {
          const offset = yield* repo.advanceClock(ownerId, input.days, MAX_OFFSET_DAYS)
          if (offset !== undefined) yield* repo.wakeLifecycle
          return offset
        }),
      )
      if (offset === undefined) {
        return yield* new TestClockInvalid({
          fields: {
            days: `would move the clock more than ${MAX_OFFSET_DAYS} days ahead (it is ${yield* repo.clockOffset(ownerId)} days ahead)`,
          },
        })
      }
      yield* Effect.logInfo("test clock advanced").pipe(
        Effect.annotateLogs({ owner_id: ownerId, days: input.days, offset_days: offset }),
      )
      return view(offset, yield* realToday)
    })

    return { enabled, realToday, todayOf, nowOf, show, advance }
  }),
}) {
  static readonly layer = Layer.effect(TestClocks, TestClocks.make)
}

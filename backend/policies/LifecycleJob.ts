import { Clock, Duration, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { Outbox } from "../platform/Outbox.ts"
import { wakeLoop, warnFailedPass } from "../platform/WakeLoop.ts"
import { Billing } from "./Billing.ts"
import { policyEvent } from "./Events.ts"
import { LIFECYCLE_CHANNEL, LifecycleRepo } from "./LifecycleRepo.ts"
import { PoliciesRepo } from "./Repo.ts"
import { TestClocks } from "./TestClocks.ts"

const BATCH = 500
/** Dates change once a day; a pass a minute keeps every policy within a minute of midnight on its owner's date. */
const POLL = Duration.minutes(1)

/**
 * One pass of the lifecycle job, as of each owner's date: upcoming policies whose coverage has started become
 * `active` (no event names this), due monthly premiums are charged, and policies whose coverage ended become
 * `expired` (`policy.expired`). Each change is a conditional update of rows locked `for update skip locked`, so
 * with any number of worker processes each policy changes once, whichever process sees it first; a pass after
 * downtime catches up on everything that came due meanwhile (every premium in turn, then the expiry).
 */
export const lifecyclePass = Effect.gen(function* () {
  const db = yield* Db
  const repo = yield* LifecycleRepo
  const policiesRepo = yield* PoliciesRepo
  const outbox = yield* Outbox
  const billing = yield* Billing
  const clocks = yield* TestClocks
  const config = yield* AppConfig
  const today = yield* clocks.realToday

  let activated = 0
  for (let batch = BATCH; batch === BATCH; activated += batch) {
    batch = (yield* repo.activateDue(today, clocks.enabled, BATCH)).length
  }

  const skip: Array<string> = []
  const charged = { charged: 0, declined: 0 }
  while (true) {
    const outcome = yield* billing.chargeNextDue(today, skip)
    if (outcome === undefined) break
    if (outcome.outcome === "failed") skip.push(outcome.policyId)
    else charged[outcome.outcome] += 1
  }

  let expired = 0
  for (let batch = BATCH; batch === BATCH; expired += batch) {
    const at = new Date(yield* Clock.currentTimeMillis)
    batch = yield* db.transaction(
      Effect.gen(function* () {
        const ids = yield* repo.expireDue(today, clocks.enabled, at, BATCH)
        const rows = yield* Effect.forEach(ids, (id) =>
          Effect.map(policiesRepo.findPolicy(id), (row) => row!),
        )
        yield* outbox.enqueue(
          rows.map((row) => policyEvent("policy.expired", row.owner_slug, row, config.consoleBaseUrl)),
        )
        return ids.length
      }),
    )
  }

  if (activated + charged.charged + charged.declined + expired > 0) {
    yield* Effect.logInfo("policy lifecycle pass").pipe(
      Effect.annotateLogs({ today, activated, ...charged, expired, not_charged: skip.length }),
    )
  }
})

/**
 * The lifecycle job in a worker process: a pass at start (catching up after downtime), then one a minute and
 * whenever `policy_lifecycle` is notified (a test clock advance, a revision), in every worker; the passes
 * share the work through row locks.
 */
export const lifecycleJobLayer = Layer.effectDiscard(
  wakeLoop({
    channel: LIFECYCLE_CHANNEL,
    poll: POLL,
    drain: lifecyclePass,
    onFailure: warnFailedPass("policy lifecycle pass failed; retried next pass"),
  }),
)

import { Clock, Duration, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Outbox } from "../platform/Outbox.ts"
import { wakeLoop, warnFailedPass } from "../platform/WakeLoop.ts"
import { ResetPolicies, StagingResets } from "../prospects/StagingResets.ts"
import { StagingConfig } from "./Config.ts"
import { policyEvent } from "./Events.ts"
import { IN_FORCE } from "./LifecycleDomain.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"
import { PoliciesRepo } from "./Repo.ts"

/** A NOTIFY on this channel runs a pass at once in every worker (operators; tests). */
export const STAGING_RESET_CHANNEL = "staging_reset"

/** The cancellation reason operators see on a policy the reset canceled. */
export const STAGING_RESET_REASON = "staging reset: the renter was reset"

const BATCH = 100
const DAY_MS = 86_400_000
/**
 * The longest wait between passes. A pass plans the next for when the least recently changed renter falls due,
 * so this only bounds how late one changed back meanwhile is looked at again.
 */
const POLL = Duration.hours(1)

/**
 * A reset renter's policies in force are canceled in the reset's transaction (`policy.canceled`, no next charge),
 * whether a partner asked for the reset or the scheduled one made it; the others stay as they are.
 */
export const resetPoliciesLayer = Layer.effect(
  ResetPolicies,
  Effect.gen(function* () {
    const lifecycle = yield* LifecycleRepo
    const policiesRepo = yield* PoliciesRepo
    const outbox = yield* Outbox
    const config = yield* AppConfig
    const end = (policyIds: ReadonlyArray<number>) =>
      Effect.gen(function* () {
        const at = new Date(yield* Clock.currentTimeMillis)
        let canceled = 0
        for (const id of policyIds.map(String)) {
          yield* lifecycle.lifecycleOf(id, true)
          const policy = (yield* policiesRepo.findPolicy(id))!
          if (!(IN_FORCE as ReadonlyArray<string>).includes(policy.status)) continue
          yield* lifecycle.cancel(id, STAGING_RESET_REASON, at)
          const row = (yield* policiesRepo.findPolicy(id))!
          yield* outbox.enqueue([policyEvent("policy.canceled", row.owner_slug, row, config.consoleBaseUrl)])
          canceled += 1
        }
        return canceled
      })
    return ResetPolicies.of({ end })
  }),
).pipe(Layer.provide(Layer.mergeAll(LifecycleRepo.layer, PoliciesRepo.layer)))

/**
 * One pass of staging's scheduled reset: every renter nobody changed for `STAGING_RESET_DAYS` (the partner's
 * writes and the journey's both count) is reset as a partner's reset would (the prospect removed, so its
 * identifiers can be sent again, and its policies in force canceled in the same transaction).
 * Each renter is reset under its prospect's lock, only if still unchanged, so concurrent passes and a partner's
 * write meanwhile are safe. Answers when the next renter falls due.
 */
export const stagingResetPass = Effect.gen(function* () {
  const resets = yield* StagingResets
  const { resetDays } = yield* StagingConfig
  const before = new Date((yield* Clock.currentTimeMillis) - resetDays * DAY_MS)

  let renters = 0
  let policies = 0
  for (let batch = BATCH; batch === BATCH;) {
    const idle = yield* resets.idleSince(before, BATCH)
    batch = idle.length
    for (const prospect of idle) {
      const reset = yield* resets.resetIdle(prospect, before)
      if (reset === undefined) continue
      renters += 1
      policies += reset.canceled
    }
  }
  if (renters > 0) {
    yield* Effect.logInfo("staging reset").pipe(
      Effect.annotateLogs({ renters, policies_canceled: policies, reset_days: resetDays }),
    )
  }
  const oldest = yield* resets.oldestChange
  return oldest === undefined ? undefined : new Date(oldest.getTime() + resetDays * DAY_MS)
})

/**
 * The scheduled reset in a worker process (staging only): a pass at start, then one when the next renter falls
 * due, at least every hour, and on each `staging_reset` NOTIFY; every worker runs it, the prospects' locks
 * share the work.
 */
export const stagingResetJobLayer = Layer.effectDiscard(
  wakeLoop({
    channel: STAGING_RESET_CHANNEL,
    poll: POLL,
    drain: stagingResetPass,
    onFailure: warnFailedPass("staging reset pass failed; retried next pass"),
  }),
)

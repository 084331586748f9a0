import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/Config.ts"
import { Db } from "../platform/Db.ts"
import { Outbox } from "../platform/Outbox.ts"
import { decideEligibility, factsOf, isoDate } from "./Eligibility.ts"
import { EligibilityRepo } from "./EligibilityRepo.ts"
import {
  eligibilityDecided,
  eligibilityRequested,
  type EligibilityRequested,
  enrollmentUrls,
  prospectEvent,
} from "./Events.ts"
import { ProspectsRepo } from "./Repo.ts"
import { Sources } from "./Sources.ts"

/** The eligibility actor's work: a requested version decided, or moved to `error` when it cannot be. */
export class EligibilityDecisions extends Context.Service<EligibilityDecisions>()(
  "partner-service/prospects/EligibilityDecisions",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const repo = yield* ProspectsRepo
      const decisions = yield* EligibilityRepo
      const sources = yield* Sources
      const outbox = yield* Outbox
      const config = yield* AppConfig

      /**
       * The eligibility actor's work for one request: under the prospect's lock, decide the version asked for if it
       * is still the current one and undecided, record the decision and announce `prospect.ready`. A request for a
       * superseded version does nothing: the write that superseded it asked for its own decision.
       */
      const decide = Effect.fn("EligibilityDecisions.decide")(function* (request: EligibilityRequested) {
        return yield* db.transaction(
          Effect.gen(function* () {
            yield* repo.lock(request.source, request.source_prospect_id)
            const facts = yield* decisions.facts(request.prospect_id)
            if (
              facts === undefined ||
              facts.prospect.version !== request.version ||
              (facts.prospect.status !== "processing" && facts.prospect.status !== "error")
            ) {
              return "superseded" as const
            }
            const decision = decideEligibility(factsOf(facts, isoDate(yield* Clock.currentTimeMillis)))
            const landed = yield* decisions.recordDecision(request.prospect_id, request.version, {
              effective_coverage_amount_cents: decision.effectiveCoverageAmountCents,
              sdi_ineligibility_reasons: decision.sdiIneligibilityReasons,
              cd_ineligibility_reasons: decision.cdIneligibilityReasons,
              rg_eligibility_status: decision.renterGuarantee?.status ?? null,
              rg_ineligibility_reasons: decision.renterGuarantee?.reasons ?? null,
              eligible: decision.eligibleForAnyProduct,
            })
            if (!landed) return "superseded" as const
            const row = (yield* repo.findById(request.prospect_id))!
            const source = yield* sources.ofProspect(row.source)
            yield* outbox.enqueue([
              prospectEvent(
                "prospect.ready",
                facts.owner.slug,
                row,
                enrollmentUrls(config.enrollmentHost, source.flow, facts.owner.slug, row),
              ),
              eligibilityDecided(facts.owner.slug, row),
            ])
            return "decided" as const
          }),
        )
      })

      /** After repeated failures to decide: the version goes to `error` with the reason, for operators. */
      const fail = Effect.fn("EligibilityDecisions.fail")(function* (
        request: EligibilityRequested,
        reason: string,
      ) {
        return yield* db.transaction(
          Effect.gen(function* () {
            yield* repo.lock(request.source, request.source_prospect_id)
            if (!(yield* decisions.recordError(request.prospect_id, request.version, reason))) return false
            const row = (yield* repo.findById(request.prospect_id))!
            yield* outbox.enqueue([eligibilityDecided(yield* repo.ownerSlug(row.owner_id), row)])
            return true
          }),
        )
      })

      /**
       * Prospects left `processing` since before `before` (their decision lost: a failover to a standby that
       * missed its commit, after its request was acknowledged) asked for again, `limit` at most: one
       * `eligibility.requested` each, for the version stored. A request that was only slow is decided once, the
       * other copy finding it decided. How many were asked for.
       */
      const askAgain = Effect.fn("EligibilityDecisions.askAgain")(function* (before: Date, limit: number) {
        return yield* db.transaction(
          Effect.gen(function* () {
            const ids = yield* decisions.takeStale(before, limit)
            const requests = []
            for (const id of ids) {
              const row = (yield* repo.findById(id))!
              requests.push(eligibilityRequested(yield* repo.ownerSlug(row.owner_id), row))
            }
            yield* outbox.enqueue(requests)
            return ids.length
          }),
        )
      })

      return { decide, fail, askAgain }
    }),
  },
) {
  static readonly layer = Layer.effect(EligibilityDecisions, EligibilityDecisions.make).pipe(
    Layer.provide(Layer.mergeAll(ProspectsRepo.layer, EligibilityRepo.layer)),
    Layer.provide(Sources.layer),
  )
}

import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { Roster } from "../roster/Roster.ts"
import { ProspectNotFound } from "./Domain.ts"
import { ProspectsRepo } from "./Repo.ts"
import { type IdleProspect, StagingRepo } from "./StagingRepo.ts"

/**
 * What becomes of a reset renter's policies, in the reset's transaction. The policies context answers it by
 * canceling those in force (staging creates no real policies or charges, and nothing may bill or move a policy
 * whose renter is gone); how many it canceled.
 */
export class ResetPolicies extends Context.Service<
  ResetPolicies,
  { readonly end: (policyIds: ReadonlyArray<number>) => Effect.Effect<number> }
>()("partner-service/prospects/ResetPolicies") {}

/**
 * Staging only: removing test prospects so partners can send their identifiers again, on a partner's request or
 * when nobody changed them for `STAGING_RESET_DAYS` (the scheduled reset, `policies/StagingResetJob.ts`).
 */
export class StagingResets extends Context.Service<StagingResets>()(
  "partner-service/prospects/StagingResets",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const repo = yield* ProspectsRepo
      const staging = yield* StagingRepo
      const roster = yield* Roster
      const policies = yield* ResetPolicies

      /**
       * Staging: removes the owner's prospect so its identifiers can be used again (the next POST creates it,
       * with `prospect.created`). Its policies, detached from it, are listed and those in force canceled; PMS
       * residents are never linked, so that list is empty.
       */
      const resetTestResident = Effect.fn("StagingResets.resetTestResident")(function* (
        slug: string,
        source: string,
        sourceProspectId: string,
      ) {
        return yield* db.transaction(
          Effect.gen(function* () {
            yield* repo.lock(source, sourceProspectId)
            const row = yield* repo.findOwned(slug, source, sourceProspectId)
            if (row === undefined) return yield* new ProspectNotFound()
            const policyIds = yield* staging.delete(row.id)
            yield* policies.end(policyIds)
            return {
              insurance_policy_ids: policyIds,
              unlinked_yardi_resident_ids: [],
              reprocessed_prospect_id: Number(row.id),
            }
          }),
        )
      })

      /**
       * Staging: removes every prospect of the owner with this email (case-insensitive), or every prospect of the
       * owner when no email is given (the published `test/sayrhino_users` reset names none); their policies in
       * force are canceled.
       */
      const resetByEmail = Effect.fn("StagingResets.resetByEmail")(function* (
        slug: string,
        email: string | undefined,
      ) {
        return yield* db.transaction(
          Effect.gen(function* () {
            const owner = yield* roster.ownerBySlug(slug)
            if (owner === undefined) return { prospect_ids: [], insurance_policy_ids: [] }
            // Each prospect's lock, in one order, so a racing POST runs wholly before or after the reset.
            for (const key of yield* staging.keysByEmail(owner.id, email)) {
              yield* repo.lock(key.source, key.source_prospect_id)
            }
            const { ids, policyIds } = yield* staging.deleteByEmail(owner.id, email)
            yield* policies.end(policyIds)
            return { prospect_ids: ids, insurance_policy_ids: policyIds }
          }),
        )
      })

      /**
       * Staging's scheduled reset of one renter, in the caller's transaction (or its own): under the prospect's
       * lock, removes it if nobody changed it since `before` and cancels its policies in force. Its id and how many
       * policies it canceled, or undefined when it changed or went meanwhile.
       */
      const resetIdle = Effect.fn("StagingResets.resetIdle")(function* (
        prospect: IdleProspect,
        before: Date,
      ) {
        return yield* db.transaction(
          Effect.gen(function* () {
            yield* repo.lock(prospect.source, prospect.source_prospect_id)
            const { ids, policyIds } = yield* staging.deleteIdle(prospect.id, before)
            if (ids.length === 0) return undefined
            return { prospectId: ids[0]!, canceled: yield* policies.end(policyIds) }
          }),
        )
      })

      return {
        resetTestResident,
        resetByEmail,
        resetIdle,
        /** The scheduled reset's candidates: prospects unchanged since `before`, least recently changed first. */
        idleSince: staging.idleSince,
        /** When the least recently changed prospect was last changed (the next reset falls due after it). */
        oldestChange: staging.oldestChange,
      }
    }),
  },
) {
  static readonly layer = Layer.effect(StagingResets, StagingResets.make).pipe(
    Layer.provide(Layer.mergeAll(ProspectsRepo.layer, StagingRepo.layer)),
  )
}

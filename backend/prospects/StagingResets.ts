import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { Roster } from "../roster/Roster.ts"
import { ProspectNotFound } from "./Domain.ts"
import { ProspectsRepo } from "./Repo.ts"
import { type IdleProspect, StagingRepo } from "./StagingRepo.ts"

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

      /**
       * Staging: removes the owner's prospect so its identifiers can be used again (the next POST creates it,
       * with `prospect.created`). Its policies stay, detached from it, and are listed; PMS residents are never
       * linked, so that list is empty.
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
       * owner when no email is given (the published `test/sayrhino_users` reset names none).
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
            return { prospect_ids: ids, insurance_policy_ids: policyIds }
          }),
        )
      })

      /**
       * Staging's scheduled reset of one renter, in the caller's transaction (or its own): under the prospect's
       * lock, removes it if nobody changed it since `before`. Its id and the ids of its policies (detached, for
       * the caller to cancel in the same transaction), or undefined when it changed or went meanwhile.
       */
      const resetIdle = Effect.fn("StagingResets.resetIdle")(function* (
        prospect: IdleProspect,
        before: Date,
      ) {
        return yield* db.transaction(
          Effect.gen(function* () {
            yield* repo.lock(prospect.source, prospect.source_prospect_id)
            const { ids, policyIds } = yield* staging.deleteIdle(prospect.id, before)
            return ids.length === 0 ? undefined : { prospectId: ids[0]!, policyIds }
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

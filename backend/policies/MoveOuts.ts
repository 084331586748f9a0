import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"
import { Outbox } from "../platform/Outbox.ts"
import { moveOutInitiated } from "./LifecycleEvents.ts"
import { type MoveOut, type MoveOutInput, MoveOutInvalid } from "./LifecycleDomain.ts"
import { LifecycleRepo } from "./LifecycleRepo.ts"
import type { MoveOutRow } from "./MoveOutsRepo.ts"

const view = (row: MoveOutRow): MoveOut => ({
  id: Number(row.id),
  external_id: row.external_id,
  status: row.status,
  policy_number: row.policy_number,
  move_out_date: row.move_out_date,
  created_at: row.created_at,
  updated_at: row.updated_at,
})

/** What the published API says of an unknown policy, whoever's it is: no owner learns of another's policies. */
const POLICY_NOT_FOUND = "Policy not found"

/**
 * Move-outs partners report for their renters' policies, upserted on the partner's `external_id` within the
 * owner. Creating one emits `move_out.initiated`; sending it again updates what it carries (the date) and emits
 * nothing. A move-out does not change its policy (later move-out states are not defined yet).
 */
export class MoveOuts extends Context.Service<MoveOuts>()("partner-service/policies/MoveOuts", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* LifecycleRepo
    const outbox = yield* Outbox

    const upsert = Effect.fn("MoveOuts.upsert")(function* (ownerSlug: string, input: MoveOutInput) {
      return yield* db.transaction(
        Effect.gen(function* () {
          const owner = (yield* repo.ownerBySlug(ownerSlug))!
          const existing = yield* repo.lockMoveOut(owner.id, input.external_id)
          if (existing !== undefined) return yield* update(existing, input)
          const missing = {
            ...(input.policy_number === undefined ? { policy_number: "Policy number is required" } : {}),
            ...(input.move_out_date === undefined ? { move_out_date: "Move out date is required" } : {}),
          }
          if (Object.keys(missing).length > 0) return yield* new MoveOutInvalid({ fields: missing })
          const policyId = yield* repo.policyOfOwner(owner.id, input.policy_number!)
          if (policyId === undefined) {
            return yield* new MoveOutInvalid({ fields: { policy_number: POLICY_NOT_FOUND } })
          }
          const id = yield* repo.insertMoveOut({
            owner_id: owner.id,
            external_id: input.external_id,
            policy_id: policyId,
            move_out_date: input.move_out_date!,
          })
          // Another request created it since the lock was looked for: this one is the resend.
          if (id === undefined)
            return yield* update((yield* repo.lockMoveOut(owner.id, input.external_id))!, input)
          const created = yield* repo.moveOut(id)
          yield* outbox.enqueue([moveOutInitiated(ownerSlug, created)])
          yield* Effect.logInfo("move-out initiated").pipe(
            Effect.annotateLogs({ move_out_id: id, policy_number: created.policy_number }),
          )
          return { created: true, moveOut: view(created) }
        }),
      )
    })

    /** A resend: the date may change, the policy may not; nothing is emitted. */
    const update = (existing: MoveOutRow, input: MoveOutInput) =>
      Effect.gen(function* () {
        if (input.policy_number !== undefined && input.policy_number !== existing.policy_number) {
          return yield* new MoveOutInvalid({
            fields: {
              policy_number: `Policy number can't change: the move-out is for ${existing.policy_number}`,
            },
          })
        }
        if (input.move_out_date !== undefined) yield* repo.setMoveOutDate(existing.id, input.move_out_date)
        return { created: false, moveOut: view(yield* repo.moveOut(existing.id)) }
      })

    return { upsert }
  }),
}) {
  static readonly layer = Layer.effect(MoveOuts, MoveOuts.make)
}

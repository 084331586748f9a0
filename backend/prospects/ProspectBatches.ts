import { Context, Effect, Layer } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { Outbox } from "../platform/Outbox.ts"
import type { OwnerRow } from "../roster/Domain.ts"
import type { ProspectFields, ProspectInvalid } from "./Domain.ts"
import { isStale, mergeProspect, ownerConflict, sealedSsnOf, writeMessages } from "./Merge.ts"
import { type ProspectRow, ProspectsRepo } from "./Repo.ts"
import type { Source } from "./Domain.ts"

/** A prospect row being written, completed in place (id, building, unit) as the batch learns them. */
type Draft = { -readonly [K in keyof ProspectRow]: ProspectRow[K] }
/** One inbound event's write, for `ProspectBatches.apply`. */
export interface EventWrite {
  readonly owner: OwnerRow
  readonly source: Source
  readonly input: ProspectFields
  readonly clientId: string
  readonly occurredAt: Date
  /** When the ingestion gateway received the event (RFC 3339): the acceptance time of the messages it writes. */
  readonly acceptedAt: string
}

export type EventWritten =
  | { readonly outcome: "applied" | "stale"; readonly id: string }
  | { readonly outcome: "refused"; readonly error: ProspectInvalid }

/** The ingest actor's writes: a batch of inbound events' prospects at a time, by the rules of a REST write. */
export class ProspectBatches extends Context.Service<ProspectBatches>()(
  "partner-service/prospects/ProspectBatches",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      const repo = yield* ProspectsRepo
      const outbox = yield* Outbox
      const crypto = yield* Crypto

      /**
       * Inbound events' writes, set-based, in the caller's transaction (or a new one): the prospects' locks in one
       * order, one read of the stored prospects, then each write in the order given by the same rules as `Prospects.save`
       * (a later event of a prospect sees the earlier ones: stale detection and events between them hold), one
       * upsert of each prospect's final state with its building and unit resolved, and every write's messages.
       */
      const apply = Effect.fn("ProspectBatches.apply")(function* (writes: ReadonlyArray<EventWrite>) {
        if (writes.length === 0) return []
        const sealed = yield* Effect.forEach(writes, ({ input }) => sealedSsnOf(crypto, input))
        return yield* db.transaction(
          Effect.gen(function* () {
            const keyOf = (w: EventWrite) => JSON.stringify([w.input.source, w.input.source_prospect_id])
            const keys = [...new Map(writes.map((w) => [keyOf(w), w.input] as const)).values()].map(
              (input) => ({
                source: input.source,
                source_prospect_id: input.source_prospect_id,
              }),
            )
            yield* repo.lockAll(keys)
            const state = new Map<string, ProspectRow | undefined>(
              (yield* repo.findAll(keys)).map((row) => [
                JSON.stringify([row.source, row.source_prospect_id]),
                row,
              ]),
            )
            // The prospect each write applied to or found newer; a prospect new in this batch gets its id below.
            const results: Array<
              | { readonly outcome: "refused"; readonly error: ProspectInvalid }
              | { readonly outcome: "applied" | "stale"; readonly row: Pick<ProspectRow, "id"> }
            > = []
            const written: Array<{
              readonly key: string
              readonly slug: string
              readonly previous: ProspectRow | undefined
              readonly row: Draft
              readonly complete: boolean
              readonly acceptedAt: string
            }> = []
            const last = new Map<string, { readonly write: EventWrite; readonly row: Draft }>()
            for (const [i, write] of writes.entries()) {
              const key = keyOf(write)
              const existing = state.get(key)
              const conflict = ownerConflict(existing, write.owner)
              if (conflict !== undefined) {
                results.push({ outcome: "refused", error: conflict })
                continue
              }
              if (existing !== undefined && isStale(existing, write.occurredAt)) {
                results.push({ outcome: "stale", row: existing })
                continue
              }
              const { fields, complete } = mergeProspect({
                owner: write.owner,
                source: write.source,
                input: write.input,
                existing,
                sealedSsn: sealed[i],
                occurredAt: write.occurredAt,
              })
              // A prospect new in this batch has its id once it is inserted, below.
              const row: Draft = Object.assign(fields, { id: existing?.id ?? "" })
              state.set(key, row)
              last.set(key, { write, row })
              written.push({
                key,
                slug: write.owner.slug,
                previous: existing,
                row,
                complete,
                acceptedAt: write.acceptedAt,
              })
              results.push({ outcome: "applied", row })
            }

            // Each prospect's final state is what is stored, with its building and unit as the roster has them now.
            const finals = [...last.values()]
            const resolved = yield* repo.resolveAll(
              finals.map(({ write, row }) => ({
                ownerId: write.owner.id,
                grantedTo: write.owner.managed_by_service ? write.clientId : null,
                row,
              })),
            )
            for (const [i, { row }] of finals.entries()) {
              row.property_id = resolved[i]!.property_id
              row.unit_id = resolved[i]!.unit_id
            }
            const ids = new Map(
              (yield* repo.upsertAll(finals.map(({ row }) => row))).map((r) => [
                JSON.stringify([r.source, r.source_prospect_id]),
                r.id,
              ]),
            )
            for (const w of written) w.row.id = ids.get(w.key)!
            yield* outbox.enqueue(
              written.flatMap((w) =>
                writeMessages(w.slug, w.previous, w.row, w.complete).map((m) => ({
                  ...m,
                  acceptedAt: w.acceptedAt,
                })),
              ),
            )
            return results.map((result): EventWritten =>
              result.outcome === "refused" ? result : { outcome: result.outcome, id: result.row.id },
            )
          }),
        )
      })

      return { apply }
    }),
  },
) {
  static readonly layer = Layer.effect(ProspectBatches, ProspectBatches.make).pipe(
    Layer.provide(ProspectsRepo.layer),
    Layer.provide(Crypto.layer),
  )
}

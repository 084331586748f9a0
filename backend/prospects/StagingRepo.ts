import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"

/** A prospect the scheduled reset may remove. */
export interface IdleProspect {
  readonly id: string
  readonly source: string
  readonly source_prospect_id: string
}

/** Deleted prospects' ids and their policies' ids, each list in ascending order. */
const deleted = (
  rows: ReadonlyArray<{ readonly id: string; readonly policy_ids: ReadonlyArray<string> }>,
) => {
  const ascending = (ids: ReadonlyArray<string>) => ids.map(Number).sort((x, y) => x - y)
  return { ids: ascending(rows.map((r) => r.id)), policyIds: ascending(rows.flatMap((r) => r.policy_ids)) }
}

/** The staging resets' SQL: which prospects a reset removes, and their removal. */
export class StagingRepo extends Context.Service<StagingRepo>()("partner-service/prospects/StagingRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db

    return {
      /** The owner's prospects with this email (any case), or every prospect of the owner without one; in lock order. */
      keysByEmail: (ownerId: string, email: string | undefined) =>
        db.query(
          (sql) => sql<Array<{ source: string; source_prospect_id: string }>>`
              select source, source_prospect_id from prospects
              where owner_id = ${ownerId} ${email === undefined ? sql`` : sql`and lower(email) = lower(${email})`}
              order by source, source_prospect_id`,
        ),
      /**
       * Deletes the prospects `keysByEmail` names (those still matching), answering their ids and the ids of
       * the policies issued to them, which the delete detaches (read in the statement's snapshot, before it).
       */
      deleteByEmail: (ownerId: string, email: string | undefined) =>
        db
          .query(
            (sql) => sql<Array<{ id: string; policy_ids: Array<string> }>>`
                with gone as (
                  delete from prospects
                  where owner_id = ${ownerId} ${email === undefined ? sql`` : sql`and lower(email) = lower(${email})`}
                  returning id
                )
                select gone.id, array(select p.id from policies p where p.prospect_id = gone.id) as policy_ids
                from gone`,
          )
          .pipe(Effect.map(deleted)),
      /**
       * Prospects nobody changed since `before` (neither the partner's writes nor the journey's write-backs), the
       * least recently changed first: the scheduled reset's candidates.
       */
      idleSince: (before: Date, limit: number) =>
        db.query(
          (sql) => sql<Array<IdleProspect>>`
              select id::text, source, source_prospect_id from prospects
              where updated_at < ${before}
              order by updated_at, id
              limit ${limit}`,
        ),
      /** When the least recently changed prospect was last changed; undefined without prospects. */
      oldestChange: db
        .query((sql) => sql<Array<{ at: Date | null }>>`select min(updated_at) as at from prospects`)
        .pipe(Effect.map((rows) => rows[0]?.at ?? undefined)),
      /** Deletes the prospect if it is still unchanged since `before` (as `delete`); whether it did. */
      deleteIdle: (id: string, before: Date) =>
        db
          .query(
            (sql) => sql<Array<{ id: string; policy_ids: Array<string> }>>`
                with gone as (delete from prospects where id = ${id} and updated_at < ${before} returning id)
                select gone.id, array(select p.id from policies p where p.prospect_id = gone.id) as policy_ids
                from gone`,
          )
          .pipe(Effect.map(deleted)),
      /** Deletes one prospect, answering the ids of the policies issued to it (as `deleteByEmail`). */
      delete: (id: string) =>
        db
          .query(
            (sql) => sql<Array<{ id: string; policy_ids: Array<string> }>>`
                with gone as (delete from prospects where id = ${id} returning id)
                select gone.id, array(select p.id from policies p where p.prospect_id = gone.id) as policy_ids
                from gone`,
          )
          .pipe(Effect.map((rows) => deleted(rows).policyIds)),
    }
  }),
}) {
  static readonly layer = Layer.effect(StagingRepo, StagingRepo.make)
}

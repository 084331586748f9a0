import { Context, Effect, Layer } from "effect"
import { ownersFiltered } from "../roster/OwnerMatch.ts"
import { Db } from "../platform/Db.ts"
import type { PolicyRow, PolicyStatus } from "./Domain.ts"

/** A filter already checked; every key optional, all of them must hold. */
export interface PolicyListFilter {
  readonly status?: PolicyStatus | undefined
  /** What was typed; the owners it names are those of `OwnerMatch.ts`. */
  readonly owner?: string | undefined
  readonly product?: PolicyRow["product_type"] | undefined
  /** Policies with a smaller id than this (the cursor). */
  readonly beforeId?: string | undefined
  readonly limit: number
}

export interface PolicyListRow {
  readonly id: string
  readonly policy_number: string
  readonly status: string
  readonly product_type: string
  readonly owner_slug: string
  readonly insured_name: string
}

/** The SQL of the operators' policy list: newest first (by id), through `policies_*_newest` (migration 0070). */
export class PolicyListRepo extends Context.Service<PolicyListRepo>()(
  "partner-service/policies/PolicyListRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        page: (filter: PolicyListFilter) =>
          db.query((sql) => {
            const conditions = [
              filter.status === undefined ? undefined : sql`p.status = ${filter.status}`,
              filter.product === undefined ? undefined : sql`p.product_type = ${filter.product}`,
              filter.owner === undefined
                ? undefined
                : sql`p.owner_id in (select id from (${ownersFiltered(sql, filter.owner)}) m)`,
              filter.beforeId === undefined ? undefined : sql`p.id < ${filter.beforeId}::bigint`,
            ].filter((condition) => condition !== undefined)
            const where = conditions.reduce((all, condition) => sql`${all} and ${condition}`, sql`true`)
            return sql<Array<PolicyListRow>>`
            select p.id::text, p.policy_number, p.status, p.product_type, o.slug as owner_slug, p.insured_name
            from policies p join owners o on o.id = p.owner_id
            where ${where} order by p.id desc limit ${filter.limit}`
          }),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(PolicyListRepo, PolicyListRepo.make)
}

import { Context, Effect, Layer } from "effect"
import { policyId } from "./Domain.ts"
import { type PolicyListFilter, PolicyListRepo } from "./PolicyListRepo.ts"

export type { PolicyListFilter }

/** Every owner's policies for operators to browse, newest first, a page at a time (the cursor is an id). */
export class PolicyList extends Context.Service<PolicyList>()("partner-service/policies/PolicyList", {
  make: Effect.gen(function* () {
    const repo = yield* PolicyListRepo

    /** A page of policies, with the row id of the last one (the next page's cursor) when the page is full. */
    const browse = Effect.fn("PolicyList.browse")(function* (filter: PolicyListFilter) {
      const rows = yield* repo.page(filter)
      return {
        policies: rows.map((row) => ({
          id: policyId(row.id),
          policy_number: row.policy_number,
          status: row.status,
          product_type: row.product_type,
          owner_slug: row.owner_slug,
          insured_name: row.insured_name,
        })),
        lastId: rows.length === filter.limit ? rows.at(-1)?.id : undefined,
      }
    })

    return { browse }
  }),
}) {
  static readonly layer = Layer.effect(PolicyList, PolicyList.make).pipe(Layer.provide(PolicyListRepo.layer))
}

import { Context, Effect, Layer, Schema } from "effect"
import { decodeCursor, encodeCursor } from "./DeliveryFilters.ts"
import { type DeliveryFilter, DeliveryReads, type FilterSets } from "./DeliveryReads.ts"

/** Filter, cursor or limit values that mean nothing: each field with its message (a 422). */
export class DeliveryFilterInvalid extends Schema.TaggedError<DeliveryFilterInvalid>()(
  "DeliveryFilterInvalid",
  {
    fields: Schema.Record(Schema.String, Schema.String),
  },
) {}

/** Owners one owner filter may name: a text matching more is too vague to read index range by range. */
const MAX_OWNERS = 100

/**
 * A checked delivery filter resolved into the endpoint and owner sets `DeliveryReads` reads by, for the console's
 * list and count, and the ids a filter matches batch by batch (a bulk retry's snapshot).
 */
export class DeliverySets extends Context.Service<DeliverySets>()("partner-service/webhooks/DeliverySets", {
  make: Effect.gen(function* () {
    const repo = yield* DeliveryReads

    /** The endpoint set the filter names (undefined: any endpoint), empty when it names none. */
    const endpointSet = (filter: DeliveryFilter) =>
      Effect.gen(function* () {
        if (filter.provider === undefined)
          return filter.endpoint === undefined ? undefined : [filter.endpoint]
        const ofProvider = yield* repo.providerEndpoints(filter.provider)
        return filter.endpoint === undefined ? ofProvider : ofProvider.filter((id) => id === filter.endpoint)
      })

    /** The endpoints and owners the filter names; a text matching too many owners is refused. */
    const filterSets = (filter: DeliveryFilter) =>
      Effect.gen(function* () {
        const endpoints = yield* endpointSet(filter)
        if (filter.owner === undefined) return { endpoints, owners: undefined } satisfies FilterSets
        const owners = yield* repo.ownerSlugs(filter.owner, MAX_OWNERS + 1)
        if (owners.length > MAX_OWNERS) {
          return yield* new DeliveryFilterInvalid({
            fields: { owner: `matches more than ${MAX_OWNERS} owners: type more of the slug or name` },
          })
        }
        return { endpoints, owners } satisfies FilterSets
      })

    /** Whether the sets leave nothing to read. */
    const none = (sets: FilterSets) => sets.endpoints?.length === 0 || sets.owners?.length === 0

    /**
     * The ids of up to `limit` deliveries matching a checked filter, newest first, after the position `after` (a
     * cursor this returned): a bulk retry's snapshot, batch by batch. `after` is null once nothing is left.
     */
    const matchingIds = Effect.fn("DeliverySets.matchingIds")(function* (
      filter: DeliveryFilter,
      after: string | null,
      limit: number,
    ) {
      const sets = yield* filterSets(filter)
      if (none(sets)) return { ids: [], after: null }
      const position = after === null ? undefined : decodeCursor(after)
      const rows = yield* repo.ids(filter, sets, position, limit)
      const last = rows[rows.length - 1]
      return {
        ids: rows.map((row) => Number(row.id)),
        after: rows.length < limit || last === undefined ? null : encodeCursor(last),
      }
    })

    return { filterSets, none, matchingIds }
  }),
}) {
  static readonly layer = Layer.effect(DeliverySets, DeliverySets.make).pipe(
    Layer.provide(DeliveryReads.layer),
  )
}

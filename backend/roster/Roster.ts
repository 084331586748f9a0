import { Context, Effect, Layer } from "effect"
import { Crypto } from "../platform/Crypto.ts"
import { Db } from "../platform/Db.ts"
import { Outbox } from "../platform/Outbox.ts"
import { makeAddressCorrections } from "./AddressCorrections.ts"
import { applyBankAccounts } from "./BankAccounts.ts"
import type { BatchRules, ItemResult } from "./Domain.ts"
import { type Kind, rosterEvents } from "./Events.ts"
import { makeOwners } from "./Owners.ts"
import { applyProperties } from "./Properties.ts"
import { RosterRepo } from "./Repo.ts"
import { applyUnits } from "./Units.ts"

const meta = (results: ReadonlyArray<ItemResult>) => ({
  created: results.filter((r) => r.action === "created").length,
  updated: results.filter((r) => r.action === "updated").length,
  failed: results.filter((r) => r.action === "failed").length,
})

/**
 * The roster service, in parts by use: owners (`Owners.ts`), the operators' address corrections
 * (`AddressCorrections.ts`), and here what every batch does around its own rules.
 */
export class Roster extends Context.Service<Roster>()("partner-service/roster/Roster", {
  make: Effect.gen(function* () {
    const repo = yield* RosterRepo
    const db = yield* Db
    const outbox = yield* Outbox
    const crypto = yield* Crypto

    /** Loads the owner of a slug the gateway already resolved, and serializes this batch with others of its owner. */
    const lockedOwner = (slug: string) =>
      Effect.gen(function* () {
        const owner = yield* repo.ownerBySlug(slug)
        if (owner === undefined) return yield* Effect.die(new Error(`owner ${slug} vanished`))
        yield* repo.lockOwner(owner.id)
        return (yield* repo.ownerBySlug(slug))!
      })

    /**
     * What every roster batch does around its own rules: apply `items` (the route has refused a batch that is not
     * an array of at most 500) under the owner's lock in one transaction, publish a `roster.*` message per applied
     * item. Each item is judged by its batch's rules, so a bad one fails alone.
     */
    const rosterBatch = (slug: string, kind: Kind, items: ReadonlyArray<unknown>, apply: BatchRules) =>
      db.transaction(
        Effect.gen(function* () {
          const owner = yield* lockedOwner(slug)
          const results = yield* apply(owner, items)
          yield* outbox.enqueue(rosterEvents(owner.slug, kind, results))
          return { results, meta: meta(results) }
        }),
      )

    /**
     * `POST /partners/{owner_slug}/bank_accounts`. An item writes only the fields it carries: creating an account
     * needs `display_name`, `routing_number` and `account_number`; an update may omit any of them.
     */
    const upsertBankAccounts = Effect.fn("Roster.upsertBankAccounts")(function* (
      slug: string,
      items: ReadonlyArray<unknown>,
    ) {
      return yield* rosterBatch(slug, "bank_account", items, applyBankAccounts(repo, crypto))
    })

    /** `POST /partners/{owner_slug}/properties`: each item matched and applied in order (see the spec's rules). */
    const upsertProperties = Effect.fn("Roster.upsertProperties")(function* (
      slug: string,
      clientId: string,
      items: ReadonlyArray<unknown>,
    ) {
      return yield* rosterBatch(slug, "property", items, applyProperties(repo, clientId))
    })

    /** `POST /partners/{owner_slug}/units`: buildings' streets derived first, then each item in order. */
    const upsertUnits = Effect.fn("Roster.upsertUnits")(function* (
      slug: string,
      clientId: string,
      items: ReadonlyArray<unknown>,
    ) {
      return yield* rosterBatch(slug, "unit", items, applyUnits(repo, clientId))
    })
    const { upsertOwner, createManagedOwner } = yield* makeOwners
    const { correctAddress } = yield* makeAddressCorrections(lockedOwner)

    return {
      upsertOwner,
      upsertBankAccounts,
      upsertProperties,
      upsertUnits,
      createManagedOwner,
      correctAddress,
      /** Operators: grant an owner, or only the named buildings (PMS property ids) of it, to a client. */
      grantOwner: (ownerId: string, clientId: string, buildings: ReadonlyArray<string> | null) =>
        repo.grant(ownerId, clientId, buildings),
      ownerBySlug: repo.ownerBySlug,
      /**
       * For each (client, PMS property id) asked, the owners granted to the client that have a building with that
       * id, by slug; keyed `JSON.stringify([clientId, pmsPropertyId])`.
       */
      ownersWithProperties: repo.ownersWithProperties,
      /** The PMS property ids of a managed owner granted to a client; undefined when every building is. */
      grantedBuildings: repo.grantedBuildings,
    }
  }),
}) {
  static readonly layer = Layer.effect(Roster, Roster.make).pipe(
    Layer.provide(RosterRepo.layer),
    Layer.provide(Crypto.layer),
  )
}

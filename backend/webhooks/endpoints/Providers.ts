import { Effect } from "effect"
import { Db } from "../../platform/Db.ts"
import { WebhookCommandRejected } from "../Domain.ts"
import { type ProviderRow, WebhooksRepo } from "./Repo.ts"

export interface PrintedProvider {
  readonly provider: string
  readonly owners: ReadonlyArray<string>
  readonly properties: ReadonlyArray<string>
  readonly created_at: string
}

/** What a provider's deliveries cover: named owners, or named properties as `OWNER_SLUG/PROPERTY_EXTERNAL_ID`. */
export type ProviderCoverage =
  { readonly owners: ReadonlyArray<string> } | { readonly properties: ReadonlyArray<string> }

/** Lowercase, so it reads the same in a URL path and in the clients' `provider` grant. */
const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/
const printedProvider = (row: ProviderRow): PrintedProvider => ({
  provider: row.name,
  owners: row.owners,
  properties: row.properties,
  created_at: row.created_at.toISOString(),
})

/** Providers: provisioned by operators with their coverage; `issueSecret` gives a new one its first secret. */
export const makeProviders = <E>(issueSecret: (subscriberId: string) => Effect.Effect<unknown, E>) =>
  Effect.gen(function* () {
    const db = yield* Db
    const repo = yield* WebhooksRepo

    /**
     * Creates the provider with its subscriber and first secret, or updates it; either way its coverage becomes
     * exactly what is given. Nothing is written when any owner or property is unknown.
     */
    const provisionProvider = Effect.fn("Secrets.provisionProvider")(function* (
      name: string,
      coverage: ProviderCoverage,
      actor: string,
    ) {
      if (!PROVIDER_NAME.test(name)) {
        return yield* new WebhookCommandRejected({
          message: `provider name '${name}' must be 1-63 lowercase letters, digits, '-' or '_' (the name the provider's API clients carry)`,
        })
      }
      return yield* db.transaction(
        Effect.gen(function* () {
          let ownerIds: ReadonlyArray<string> = []
          let propertyIds: Array<string> = []
          if ("owners" in coverage) {
            const slugs = [...new Set(coverage.owners)]
            const found = yield* repo.ownersBySlug(slugs)
            const unknown = slugs.filter((slug) => !found.some((owner) => owner.slug === slug))
            if (unknown.length > 0) {
              return yield* new WebhookCommandRejected({
                message: `unknown owner slugs: ${unknown.join(", ")}`,
              })
            }
            ownerIds = found.map((owner) => owner.id)
          } else {
            const problems: Array<string> = []
            for (const reference of new Set(coverage.properties)) {
              const slash = reference.indexOf("/")
              const id =
                slash > 0
                  ? yield* repo.propertyId(reference.slice(0, slash), reference.slice(slash + 1))
                  : undefined
              if (id === undefined) problems.push(reference)
              else propertyIds = [...propertyIds, id]
            }
            if (problems.length > 0) {
              return yield* new WebhookCommandRejected({
                message: `unknown properties (OWNER_SLUG/PROPERTY_EXTERNAL_ID): ${problems.join(", ")}`,
              })
            }
          }
          const { id, created } = yield* repo.upsertProvider(name)
          yield* repo.replaceCoverage(id, { ownerIds, propertyIds })
          const provider = (yield* repo.provider(name))!
          if ((yield* repo.activeSecrets(provider.subscriber_id!)).length === 0) {
            yield* issueSecret(provider.subscriber_id!)
          }
          yield* repo.audit({
            actor,
            action: created ? "providers.create" : "providers.update",
            target: `provider:${name}`,
            details: { owners: provider.owners, properties: provider.properties },
          })
          return { ...printedProvider(provider), created }
        }),
      )
    })

    return {
      provisionProvider,
      providers: repo.providers.pipe(
        Effect.map((rows) => rows.map(printedProvider)),
        Effect.withSpan("Secrets.providers"),
      ),
    }
  })

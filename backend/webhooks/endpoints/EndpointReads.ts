import { Context, Effect, Layer } from "effect"
import type { FoundRow } from "../../contract/Search.ts"
import { Db } from "../../platform/Db.ts"

/**
 * What the webhooks context lets the console and the portal read of its subscribers: the providers covering an
 * owner, the endpoints an owner's page lists, a subscriber's endpoints for the portal, an endpoint found by id, a provider, and the providers' names. The rows are this
 * context's; readers take these types as they are.
 */
export class EndpointReads extends Context.Service<EndpointReads>()(
  "partner-service/webhooks/EndpointReads",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        /** Providers covering the owner, whole or by some of its buildings. */
        providersOf: (ownerId: string) =>
          db.query(
            (sql) => sql<Array<{ id: string; name: string; coverage: "owner" | "properties" }>>`
        select pr.id::text, pr.name, 'owner' as coverage
        from provider_owners po join providers pr on pr.id = po.provider_id
        where po.owner_id = ${ownerId}::bigint
        union
        select pr.id::text, pr.name, 'properties' as coverage
        from provider_properties pp join providers pr on pr.id = pp.provider_id
          join properties p on p.id = pp.property_id
        where p.owner_id = ${ownerId}::bigint
        order by name, coverage`,
          ),
        /** Endpoints (not deleted) of the owner and of the providers given. */
        endpointsOf: (ownerId: string, providerIds: ReadonlyArray<string>) =>
          db.query(
            (sql) => sql<
              Array<{
                id: number
                name: string
                destination_url: string
                status: string
                events: Array<string>
                provider_name: string | null
              }>
            >`
        select e.id::int, e.name, e.destination_url, e.status, e.events, pr.name as provider_name
        from webhook_endpoints e join webhook_subscribers s on s.id = e.subscriber_id
          left join providers pr on pr.id = s.provider_id
        where e.deleted_at is null
          and (s.owner_id = ${ownerId}::bigint or s.provider_id = any(${providerIds as Array<string>}::bigint[]))
        order by e.id`,
          ),
        findEndpoint: (id: string) =>
          db.query(
            (sql) => sql<Array<FoundRow>>`
        select id::text, 'Endpoint ' || id || ' ' || name as label,
          concat_ws(' · ', destination_url, status) as detail
        from webhook_endpoints where id = ${id}::bigint and deleted_at is null`,
          ),
        /**
         * Every endpoint of one subscriber's, the owner's own or the provider's, deleted ones too (their deliveries
         * are still listed), with whether each is deleted.
         */
        subscriberEndpoints: (holder: { readonly ownerId: string } | { readonly providerId: string }) =>
          db.query(
            (sql) => sql<
              Array<{
                id: number
                name: string
                destination_url: string
                status: "active" | "suspended" | "disabled"
                events: Array<string>
                deleted: boolean
              }>
            >`
        select e.id::int, e.name, e.destination_url, e.status, e.events, e.deleted_at is not null as deleted
        from webhook_endpoints e join webhook_subscribers s on s.id = e.subscriber_id
        where ${"ownerId" in holder ? sql`s.owner_id = ${holder.ownerId}::bigint` : sql`s.provider_id = ${holder.providerId}::bigint`}
        order by e.id`,
          ),
        /** A provider by name or id, and whether the service has provisioned its subscriber. */
        provider: (provider: { readonly name: string } | { readonly id: string }) =>
          db
            .query(
              (sql) => sql<Array<{ id: string; name: string; provisioned: boolean }>>`
          select p.id::text, p.name, s.id is not null as provisioned
          from providers p left join webhook_subscribers s on s.provider_id = p.id
          where ${"name" in provider ? sql`p.name = ${provider.name}` : sql`p.id = ${provider.id}::bigint`}`,
            )
            .pipe(Effect.map(([row]) => row)),
        /** Every provider's name, for the console's filters. */
        providerNames: db.query(
          (sql) => sql<Array<{ name: string }>>`select name from providers order by name`,
        ),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(EndpointReads, EndpointReads.make)
}

import { Context, Effect, Layer } from "effect"
import { Db } from "../platform/Db.ts"

/**
 * What auth lets others read of its clients: the clients granted an owner, with their grant, for the console's
 * owner page. A client's secret is never selected.
 */
export class ClientReads extends Context.Service<ClientReads>()("partner-service/auth/ClientReads", {
  make: Effect.gen(function* () {
    const db = yield* Db
    return {
      grantedOwner: (ownerId: string) =>
        db.query(
          (sql) => sql<
            Array<{
              id: string
              name: string | null
              gateway: string
              scopes: Array<string>
              buildings: Array<string> | null
              granted_at: Date
              revoked_at: Date | null
            }>
          >`
        select c.id, c.name, c.gateway, c.scopes, g.buildings, g.created_at as granted_at, c.revoked_at
        from client_owner_grants g join clients c on c.id = g.client_id
        where g.owner_id = ${ownerId}::bigint order by g.created_at, c.id`,
        ),
    }
  }),
}) {
  static readonly layer = Layer.effect(ClientReads, ClientReads.make)
}

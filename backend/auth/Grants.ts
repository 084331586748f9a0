import type { DbShape } from "../platform/Db.ts"

/**
 * Grants an owner, or only the named buildings (PMS property ids) of it, to a client, in the caller's
 * transaction: the roster grants an owner to the client that created it, and operators grant existing ones. The
 * grants are auth's rows; this is how another context writes one.
 */
export const grantOwner = (
  db: DbShape,
  ownerId: string,
  clientId: string,
  buildings: ReadonlyArray<string> | null,
) =>
  db.query(
    (sql) => sql`
      insert into client_owner_grants (client_id, owner_id, buildings)
      values (${clientId}, ${ownerId}, ${buildings === null ? null : sql.array([...buildings])})
      on conflict (client_id, owner_id) do update set buildings = excluded.buildings`,
  )

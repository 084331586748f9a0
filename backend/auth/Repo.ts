import { Context, Effect, Layer } from "effect"
import { Db, type Sql } from "../platform/Db.ts"
import type { Client, Gateway } from "./Domain.ts"

interface ClientRow {
  readonly id: string
  readonly gateway: Gateway
  readonly name: string
  readonly secret_hash: string
  readonly scopes: Array<string>
  readonly owners: Array<string>
  readonly provider: string | null
  readonly source: string | null
  readonly created_at: Date
  readonly revoked_at: Date | null
}

export type OwnerAccess = "granted" | "not granted" | "unknown"

export interface StoredKey {
  readonly kid: string
  readonly algorithm: string
  readonly publicJwk: Record<string, unknown>
  readonly privateJwkSealed: Buffer
  readonly createdAt: Date
  readonly retiredAt: Date | null
}

const toClient = (row: ClientRow): Client & { readonly secretHash: string } => ({
  id: row.id,
  gateway: row.gateway,
  name: row.name,
  scopes: row.scopes,
  owners: row.owners,
  provider: row.provider,
  source: row.source,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
  secretHash: row.secret_hash,
})

const selectClients = (sql: Sql, where: ReturnType<Sql>) => sql<Array<ClientRow>>`
  select c.id, c.gateway, c.name, c.secret_hash, c.scopes, c.provider, c.source, c.created_at, c.revoked_at,
         coalesce(array_agg(o.slug order by o.slug) filter (where o.slug is not null), '{}') as owners
  from clients c
  left join client_owner_grants g on g.client_id = c.id
  left join owners o on o.id = g.owner_id
  ${where}
  group by c.id
  order by c.created_at, c.id`

export class AuthRepo extends Context.Service<AuthRepo>()("partner-service/auth/AuthRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db

    const findClient = (id: string) =>
      db
        .query((sql) => selectClients(sql, sql`where c.id = ${id}`))
        .pipe(Effect.map((rows) => (rows[0] ? toClient(rows[0]) : undefined)))

    return {
      insertClient: (client: {
        readonly id: string
        readonly gateway: Gateway
        readonly name: string
        readonly secretHash: string
        readonly scopes: ReadonlyArray<string>
        readonly provider: string | null
        readonly source: string | null
      }) =>
        db.query(
          (sql) => sql`
            insert into clients (id, gateway, name, secret_hash, scopes, provider, source)
            values (${client.id}, ${client.gateway}, ${client.name}, ${client.secretHash},
                    ${sql.array([...client.scopes])}, ${client.provider}, ${client.source})`,
        ),
      findClient,
      listClients: db
        .query((sql) => selectClients(sql, sql``))
        .pipe(Effect.map((rows) => rows.map(toClient))),
      revokeClient: (id: string) =>
        db
          .query((sql) => sql`update clients set revoked_at = now() where id = ${id} and revoked_at is null`)
          .pipe(Effect.map((result) => result.count > 0)),
      ownersBySlug: (slugs: ReadonlyArray<string>) =>
        db.query(
          (sql) => sql<Array<{ id: string; slug: string }>>`
            select id, slug from owners where slug = any(${sql.array([...slugs])})`,
        ),
      grantOwners: (clientId: string, ownerIds: ReadonlyArray<string>) =>
        ownerIds.length === 0
          ? Effect.void
          : db.query(
              (sql) => sql`
                insert into client_owner_grants ${sql(ownerIds.map((ownerId) => ({ client_id: clientId, owner_id: ownerId })))}
                on conflict do nothing`,
            ),
      /**
       * What the gateway needs about a caller, in one query: the client's standing and, when `ownerSlug` is
       * given, whether that owner exists and is granted to the client.
       */
      sourceExists: (code: string) =>
        db
          .query((sql) => sql<Array<{ one: number }>>`select 1 as one from sources where code = ${code}`)
          .pipe(Effect.map((rows) => rows.length > 0)),
      callerAccess: (clientId: string, ownerSlug: string | undefined) =>
        db
          .query(
            (sql) => sql<
              Array<{
                gateway: Gateway
                scopes: Array<string>
                provider: string | null
                source: string | null
                revoked_at: Date | null
                owner_access: OwnerAccess | null
              }>
            >`
              select c.gateway, c.scopes, c.provider, c.source, c.revoked_at,
                     (select case when g.client_id is null then 'not granted' else 'granted' end
                      from owners o
                      left join client_owner_grants g on g.owner_id = o.id and g.client_id = c.id
                      where o.slug = ${ownerSlug ?? null}) as owner_access
              from clients c where c.id = ${clientId}`,
          )
          .pipe(
            Effect.map(([row]) =>
              row === undefined
                ? undefined
                : {
                    gateway: row.gateway,
                    scopes: row.scopes,
                    provider: row.provider,
                    source: row.source,
                    revokedAt: row.revoked_at,
                    ownerAccess:
                      ownerSlug === undefined ? undefined : (row.owner_access ?? ("unknown" as const)),
                  },
            ),
          ),

      insertKey: (key: Omit<StoredKey, "createdAt" | "retiredAt">) =>
        db.query(
          (sql) => sql`
            insert into signing_keys (kid, algorithm, public_jwk, private_jwk_sealed)
            values (${key.kid}, ${key.algorithm}, ${sql.json(key.publicJwk as never)}, ${key.privateJwkSealed})`,
        ),
      /** Retires every key but `kid`: it stops signing; it still verifies until its tokens expired. */
      retireOtherKeys: (kid: string) =>
        db.query(
          (sql) => sql`update signing_keys set retired_at = now() where kid <> ${kid} and retired_at is null`,
        ),
      /** Keys that sign or may still verify: unretired, or retired less than `ttlSeconds` ago. */
      liveKeys: (ttlSeconds: number) =>
        db
          .query(
            (sql) => sql<
              Array<{
                kid: string
                algorithm: string
                public_jwk: Record<string, unknown>
                private_jwk_sealed: Buffer
                created_at: Date
                retired_at: Date | null
              }>
            >`
              select kid, algorithm, public_jwk, private_jwk_sealed, created_at, retired_at from signing_keys
              where retired_at is null or retired_at > now() - make_interval(secs => ${ttlSeconds})
              order by created_at desc, kid`,
          )
          .pipe(
            Effect.map((rows) =>
              rows.map((r): StoredKey => ({
                kid: r.kid,
                algorithm: r.algorithm,
                publicJwk: r.public_jwk,
                privateJwkSealed: r.private_jwk_sealed,
                createdAt: r.created_at,
                retiredAt: r.retired_at,
              })),
            ),
          ),

      /**
       * The standing of `source` for the client id at `now`: blocked until when, if at all, and whether it failed
       * within the hour a failure is remembered.
       */
      failuresOf: (clientId: string, source: string, now: Date) =>
        db
          .query(
            (sql) => sql<Array<{ blocked_until: Date | null; recent: boolean }>>`
              select blocked_until, last_failure_at >= ${now}::timestamptz - interval '1 hour' as recent
              from token_failures where client_id = ${clientId} and source = ${source}`,
          )
          .pipe(
            Effect.map(([row]) => ({
              blockedUntil: row?.blocked_until ?? undefined,
              failedRecently: row?.recent ?? false,
            })),
          ),
      /**
       * Counts a failure of `source` for the client id; from the `free`-th consecutive one on, that source is
       * blocked for 2^(n - free) seconds, at most `maxBlockSeconds`. A quiet hour forgets the count.
       */
      recordFailure: (clientId: string, source: string, now: Date, free: number, maxBlockSeconds: number) =>
        db.query(
          (sql) => sql`
            insert into token_failures as f (client_id, source, failures, last_failure_at)
            values (${clientId}, ${source}, 1, ${now})
            on conflict (client_id, source) do update set
              failures = case when f.last_failure_at < ${now}::timestamptz - interval '1 hour' then 1
                              else f.failures + 1 end,
              last_failure_at = excluded.last_failure_at,
              blocked_until = case
                when f.last_failure_at >= ${now}::timestamptz - interval '1 hour' and f.failures + 1 >= ${free}
                then ${now}::timestamptz
                     + make_interval(secs => least(power(2, f.failures + 1 - ${free}), ${maxBlockSeconds}))
                else null end`,
        ),
      pruneFailures: db.query(
        (sql) => sql`delete from token_failures where last_failure_at < now() - interval '1 hour'`,
      ),
      clearFailures: (clientId: string, source: string) =>
        db.query(
          (sql) => sql`delete from token_failures where client_id = ${clientId} and source = ${source}`,
        ),
    }
  }),
}) {
  static readonly layer = Layer.effect(AuthRepo, AuthRepo.make)
}

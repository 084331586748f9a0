import { Context, Effect, Layer } from "effect"
import { Db, type Sql } from "../../platform/Db.ts"
import type { DeliveryStatus, EndpointStatus } from "../Domain.ts"
import { type AuditEntry, recordAudit } from "../../audit/Audit.ts"

/** The engine's scheduler wakes on this channel and publishes every due delivery. */
export const WEBHOOK_DUE = "webhook_due"

/** What a deleted endpoint's undelivered deliveries say when they stop. */
export const DELETED_REASON = "Endpoint deleted; delivery canceled"

export interface EndpointRow {
  readonly id: string
  readonly name: string
  readonly destination_url: string
  readonly events: Array<string>
  readonly status: EndpointStatus
  readonly suspension_reason: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface DeliveryRow {
  readonly id: string
  readonly endpoint_id: string
  readonly status: DeliveryStatus
  readonly attempt_number: number
  readonly payload: Buffer
  readonly last_attempted_at: Date | null
  readonly delivered_at: Date | null
  readonly next_retry_at: Date | null
  readonly last_attempt_failure_reason: string | null
  readonly duration_ms: number | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface AttemptRow {
  readonly series: number
  readonly attempt_number: number
  readonly started_at: Date
  readonly status_code: number | null
  readonly duration_ms: number | null
  readonly failure_reason: string | null
  readonly response_body: string | null
}

export interface SecretRow {
  readonly id: string
  readonly secret_sealed: Buffer
  readonly created_at: Date
  readonly expires_at: Date | null
}

export interface ProviderRow {
  readonly id: string
  readonly name: string
  readonly created_at: Date
  readonly subscriber_id: string | null
  readonly owners: Array<string>
  readonly properties: Array<string>
}

/** The columns a partner may change on an endpoint; absent ones keep their value. */
export interface EndpointChanges {
  readonly name?: string
  readonly destination_url?: string
  readonly events?: ReadonlyArray<string>
  readonly status?: EndpointStatus
}

const ENDPOINT_COLUMNS = [
  "id",
  "name",
  "destination_url",
  "events",
  "status",
  "suspension_reason",
  "created_at",
  "updated_at",
] as const satisfies ReadonlyArray<keyof EndpointRow>

/**
 * A delivery's columns as the API shows them: while a claim's lease runs, the stored status (the one before the
 * claim, kept so the claim touches no index) reads `delivering`, with no next attempt due.
 */
const deliveryColumns = (sql: Sql) => sql`
  id, endpoint_id, case when lease_until > now() then 'delivering' else status end as status, attempt_number,
  payload, last_attempted_at, delivered_at, case when lease_until > now() then null else next_retry_at end
  as next_retry_at, last_attempt_failure_reason, duration_ms, created_at, updated_at`

/** The rows the API shows with `status` (see `deliveryColumns`). */
const withStatus = (sql: Sql, status: DeliveryStatus) => {
  switch (status) {
    case "delivering":
      return sql`and status in ('pending', 'retrying', 'rate_limited') and lease_until > now()`
    case "pending":
    case "retrying":
    case "rate_limited":
      return sql`and status = ${status} and (lease_until is null or lease_until <= now())`
    case "delivered":
    case "failed":
      return sql`and status = ${status}`
  }
}

/** Statuses a delivery stops in; every other one is still to be attempted. */
const SETTLED = ["delivered", "failed"]

const selectProviders = (sql: Sql, where: ReturnType<Sql>) => sql<Array<ProviderRow>>`
  select p.id, p.name, p.created_at, s.id as subscriber_id,
         coalesce((select array_agg(o.slug order by o.slug collate "C")
                   from provider_owners po join owners o on o.id = po.owner_id
                   where po.provider_id = p.id), '{}') as owners,
         coalesce((select array_agg(o.slug || '/' || pr.external_system_id
                                    order by o.slug collate "C", pr.external_system_id collate "C")
                   from provider_properties pp join properties pr on pr.id = pp.property_id
                   join owners o on o.id = pr.owner_id
                   where pp.provider_id = p.id), '{}') as properties
  from providers p left join webhook_subscribers s on s.provider_id = p.id
  ${where}
  order by p.name collate "C"`

export class WebhooksRepo extends Context.Service<WebhooksRepo>()("partner-service/webhooks/WebhooksRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db

    return {
      ownerId: (slug: string) =>
        db
          .query((sql) => sql<Array<{ id: string }>>`select id from owners where slug = ${slug}`)
          .pipe(Effect.map(([row]) => row?.id)),
      ownerSubscriber: (ownerId: string) =>
        db
          .query(
            (sql) =>
              sql<Array<{ id: string }>>`select id from webhook_subscribers where owner_id = ${ownerId}`,
          )
          .pipe(Effect.map(([row]) => row?.id)),
      /** Undefined when the owner has one already (two first endpoints at once make one subscriber). */
      insertOwnerSubscriber: (ownerId: string) =>
        db
          .query(
            (sql) => sql<Array<{ id: string }>>`
              insert into webhook_subscribers (owner_id) values (${ownerId})
              on conflict (owner_id) do nothing returning id`,
          )
          .pipe(Effect.map(([row]) => row?.id)),
      provider: (name: string) =>
        db.query((sql) => selectProviders(sql, sql`where p.name = ${name}`)).pipe(Effect.map(([row]) => row)),
      providers: db.query((sql) => selectProviders(sql, sql``)),
      /** Creates the provider with its subscriber, or finds them; whether it was created. */
      upsertProvider: (name: string) =>
        db.query(async (sql) => {
          const [inserted] = await sql<Array<{ id: string }>>`
            insert into providers (name) values (${name}) on conflict (name) do nothing returning id`
          const id =
            inserted?.id ??
            (await sql<Array<{ id: string }>>`select id from providers where name = ${name}`)[0]!.id
          await sql`insert into webhook_subscribers (provider_id) values (${id}) on conflict (provider_id) do nothing`
          return { id, created: inserted !== undefined }
        }),
      /** The provider covers exactly these owners, or exactly these properties, from now on. */
      replaceCoverage: (
        providerId: string,
        coverage: { readonly ownerIds: ReadonlyArray<string>; readonly propertyIds: ReadonlyArray<string> },
      ) =>
        db.query(async (sql) => {
          await sql`delete from provider_owners where provider_id = ${providerId}`
          await sql`delete from provider_properties where provider_id = ${providerId}`
          for (const ownerId of coverage.ownerIds) {
            await sql`insert into provider_owners (provider_id, owner_id) values (${providerId}, ${ownerId})`
          }
          for (const propertyId of coverage.propertyIds) {
            await sql`
              insert into provider_properties (provider_id, property_id) values (${providerId}, ${propertyId})`
          }
        }),
      ownersBySlug: (slugs: ReadonlyArray<string>) =>
        db.query(
          (sql) => sql<Array<{ id: string; slug: string }>>`
            select id, slug from owners where slug = any(${sql.array([...slugs])}::text[])`,
        ),
      /** The property `externalId` of the owner `slug`, or undefined. */
      propertyId: (slug: string, externalId: string) =>
        db
          .query(
            (sql) => sql<Array<{ id: string }>>`
              select p.id from properties p join owners o on o.id = p.owner_id
              where o.slug = ${slug} and p.external_system_id = ${externalId}`,
          )
          .pipe(Effect.map(([row]) => row?.id)),

      insertSecret: (subscriberId: string, sealed: Buffer) =>
        db
          .query(
            (sql) => sql<Array<SecretRow>>`
              insert into webhook_secrets (subscriber_id, secret_sealed) values (${subscriberId}, ${sealed})
              returning id, secret_sealed, created_at, expires_at`,
          )
          .pipe(Effect.map(([row]) => row!)),
      /** Secrets not yet expired, newest first. */
      activeSecrets: (subscriberId: string) =>
        db.query(
          (sql) => sql<Array<SecretRow>>`
            select id, secret_sealed, created_at, expires_at from webhook_secrets
            where subscriber_id = ${subscriberId} and (expires_at is null or expires_at > now())
            order by created_at desc, id desc`,
        ),
      /** The active secrets of the subscriber a delivery goes to (none for an unknown delivery). */
      activeSecretsOfDelivery: (deliveryId: string) =>
        db.query(
          (sql) => sql<Array<Pick<SecretRow, "secret_sealed">>>`
            select s.secret_sealed
            from webhook_deliveries d
            join webhook_endpoints e on e.id = d.endpoint_id
            join webhook_secrets s on s.subscriber_id = e.subscriber_id
            where d.id = ${deliveryId} and (s.expires_at is null or s.expires_at > now())`,
        ),
      /** Every active secret but `keepId` expires after `overlapMs` (never later than it already would). */
      expireOtherSecrets: (subscriberId: string, keepId: string, overlapMs: number) =>
        db
          .query(
            (sql) => sql<Array<{ expires_at: Date }>>`
              update webhook_secrets
              set expires_at = least(coalesce(expires_at, 'infinity'),
                                     now() + make_interval(secs => ${overlapMs / 1000}))
              where subscriber_id = ${subscriberId} and id <> ${keepId}
                and (expires_at is null or expires_at > now())
              returning expires_at`,
          )
          .pipe(Effect.map((rows) => rows.map((row) => row.expires_at))),
      customHeaders: (subscriberId: string) =>
        db
          .query(
            (sql) => sql<Array<{ custom_headers: Record<string, string> }>>`
              select custom_headers from webhook_subscribers where id = ${subscriberId}`,
          )
          .pipe(Effect.map(([row]) => row?.custom_headers ?? {})),
      setCustomHeaders: (subscriberId: string, headers: Readonly<Record<string, string>>) =>
        db.query(
          (sql) => sql`
            update webhook_subscribers set custom_headers = ${sql.json(headers as never)}
            where id = ${subscriberId}`,
        ),
      audit: (entry: AuditEntry) => recordAudit(db, entry),

      insertEndpoint: (
        subscriberId: string,
        endpoint: {
          readonly name: string
          readonly destination_url: string
          readonly events: ReadonlyArray<string>
        },
      ) =>
        db
          .query(
            (sql) => sql<Array<EndpointRow>>`
              insert into webhook_endpoints (subscriber_id, name, destination_url, events)
              values (${subscriberId}, ${endpoint.name}, ${endpoint.destination_url},
                      ${sql.array([...endpoint.events])}::text[])
              returning ${sql(ENDPOINT_COLUMNS)}`,
          )
          .pipe(Effect.map(([row]) => row!)),
      endpoints: (subscriberId: string) =>
        db.query(
          (sql) => sql<Array<EndpointRow>>`
            select ${sql(ENDPOINT_COLUMNS)} from webhook_endpoints
            where subscriber_id = ${subscriberId} and deleted_at is null
            order by id`,
        ),
      /** The endpoint unless deleted or another subscriber's; with `lock`, locked until the transaction ends. */
      endpoint: (subscriberId: string, id: string, lock = false) =>
        db
          .query(
            (sql) => sql<Array<EndpointRow>>`
              select ${sql(ENDPOINT_COLUMNS)} from webhook_endpoints
              where id = ${id} and subscriber_id = ${subscriberId} and deleted_at is null
              ${lock ? sql`for update` : sql``}`,
          )
          .pipe(Effect.map(([row]) => row)),
      /** Writes the changes; a status sent back to active, or changed, clears the suspension reason. */
      updateEndpoint: (id: string, changes: EndpointChanges, clearReason: boolean) =>
        db
          .query(
            (sql) => sql<Array<EndpointRow>>`
              update webhook_endpoints set
                name = coalesce(${changes.name ?? null}, name),
                destination_url = coalesce(${changes.destination_url ?? null}, destination_url),
                events = coalesce(${changes.events ? sql.array([...changes.events]) : null}::text[], events),
                status = coalesce(${changes.status ?? null}, status),
                suspension_reason = case when ${clearReason} then null else suspension_reason end,
                updated_at = now()
              where id = ${id}
              returning ${sql(ENDPOINT_COLUMNS)}`,
          )
          .pipe(Effect.map(([row]) => row!)),
      /** Soft-deletes the endpoint and fails every delivery of it still to be attempted. */
      deleteEndpoint: (id: string) =>
        db.query(async (sql) => {
          await sql`update webhook_endpoints set deleted_at = now(), updated_at = now() where id = ${id}`
          const canceled = await sql`
            update webhook_deliveries
            set status = 'failed', last_attempt_failure_reason = ${DELETED_REASON}, next_retry_at = null,
                lease_until = null, held_since = null, updated_at = now()
            where endpoint_id = ${id} and status <> all(${sql.array(SETTLED)}::text[])`
          return canceled.count
        }),

      deliveries: (endpointId: string, status: DeliveryStatus | undefined, limit: number, offset: number) =>
        db.query(async (sql) => {
          const where = sql`where endpoint_id = ${endpointId} ${status ? withStatus(sql, status) : sql``}`
          const [count] = await sql<Array<{ total: string }>>`
            select count(*) as total from webhook_deliveries ${where}`
          const rows = await sql<Array<DeliveryRow>>`
            select ${deliveryColumns(sql)} from webhook_deliveries ${where}
            order by id desc limit ${limit} offset ${offset}`
          return { total: Number(count!.total), rows }
        }),
      delivery: (endpointId: string, id: string) =>
        db
          .query(
            (sql) => sql<Array<DeliveryRow>>`
              select ${deliveryColumns(sql)} from webhook_deliveries
              where id = ${id} and endpoint_id = ${endpointId}`,
          )
          .pipe(Effect.map(([row]) => row)),
      attempts: (deliveryId: string) =>
        db.query(
          (sql) => sql<Array<AttemptRow>>`
            select series, attempt_number, started_at, status_code, duration_ms, failure_reason, response_body
            from webhook_attempts where delivery_id = ${deliveryId}
            order by series, attempt_number`,
        ),
      /**
       * A new series of attempts from attempt 1, due now, for each delivery (of `endpointId` when given); the ids
       * it applied to. Rows are locked in id order, as the claim locks them. The scheduler is woken on commit.
       */
      retryDeliveries: (ids: ReadonlyArray<number | string>, endpointId?: string) =>
        db.query(async (sql) => {
          if (ids.length === 0) return []
          const updated = await sql<Array<{ id: string }>>`
            with target as (
              select id from webhook_deliveries
              where id = any(${ids.map(String)}::bigint[])
                ${endpointId === undefined ? sql`` : sql`and endpoint_id = ${endpointId}`}
              order by id
              for update
            )
            update webhook_deliveries d
            set series = series + 1, attempt_number = 1, status = 'pending', next_retry_at = now(),
                lease_until = null, held_since = null, updated_at = now()
            from target where d.id = target.id
            returning d.id`
          if (updated.length > 0) await sql`select pg_notify(${WEBHOOK_DUE}, '')`
          return updated.map((row) => Number(row.id))
        }),
    }
  }),
}) {
  static readonly layer = Layer.effect(WebhooksRepo, WebhooksRepo.make)
}

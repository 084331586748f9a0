import { Context, Effect, Layer } from "effect"
import { ownersFiltered } from "../../roster/OwnerMatch.ts"
import { Db, type Sql } from "../../platform/Db.ts"
import { type AuditEntry, recordAudit } from "../../audit/Audit.ts"
import type { EndpointStatus } from "../Domain.ts"
import { WEBHOOK_DUE } from "./Repo.ts"

/** An endpoint with whom it belongs to, as operators see it across every owner and provider. */
export interface OperatorEndpointRow {
  readonly id: string
  readonly subscriber_id: string
  readonly name: string
  readonly destination_url: string
  readonly events: Array<string>
  readonly status: EndpointStatus
  readonly suspension_reason: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly owner_slug: string | null
  readonly owner_name: string | null
  readonly provider_name: string | null
  readonly custom_headers: Record<string, string>
}

export interface EndpointListFilter {
  readonly owner?: string | undefined
  readonly provider?: string | undefined
  readonly status?: EndpointStatus | undefined
  /** Endpoints with a smaller id than this (the cursor). */
  readonly beforeId?: string | undefined
  readonly limit: number
}

export interface SubscriberSecretsRow {
  readonly subscriber_id: string
  readonly owner_slug: string | null
  readonly owner_name: string | null
  readonly provider_name: string | null
  /** `sealed`: the sealed secret in base64, for its fingerprint. */
  readonly secrets: Array<{
    readonly created_at: string
    readonly expires_at: string | null
    readonly sealed: string
  }>
}

const endpointSelect = (sql: Sql) => sql`
  select e.id::text, e.subscriber_id::text, e.name, e.destination_url, e.events, e.status, e.suspension_reason,
         e.created_at, e.updated_at, o.slug as owner_slug, o.name as owner_name, p.name as provider_name,
         s.custom_headers
  from webhook_endpoints e
  join webhook_subscribers s on s.id = e.subscriber_id
  left join owners o on o.id = s.owner_id
  left join providers p on p.id = s.provider_id`

/** The operator console's queries over endpoints, deliveries and secrets of every subscriber. */
export class OperationsRepo extends Context.Service<OperationsRepo>()(
  "partner-service/webhooks/OperationsRepo",
  {
    make: Effect.gen(function* () {
      const db = yield* Db
      return {
        endpoints: (filter: EndpointListFilter) =>
          db.query((sql) => {
            const conditions = [
              sql`e.deleted_at is null`,
              filter.owner === undefined
                ? undefined
                : sql`s.owner_id in (select id from (${ownersFiltered(sql, filter.owner)}) m)`,
              filter.provider === undefined ? undefined : sql`p.name = ${filter.provider}`,
              filter.status === undefined ? undefined : sql`e.status = ${filter.status}`,
              filter.beforeId === undefined ? undefined : sql`e.id < ${filter.beforeId}`,
            ].filter((condition) => condition !== undefined)
            const where = conditions.reduce((all, condition) => sql`${all} and ${condition}`)
            return sql<Array<OperatorEndpointRow>>`
            ${endpointSelect(sql)} where ${where} order by e.id desc limit ${filter.limit}`
          }),
        endpoint: (id: string, lock = false) =>
          db
            .query(
              (sql) => sql<Array<OperatorEndpointRow>>`
              ${endpointSelect(sql)} where e.id = ${id} and e.deleted_at is null
              ${lock ? sql`for update of e` : sql``}`,
            )
            .pipe(Effect.map(([row]) => row)),
        setStatus: (id: string, status: EndpointStatus, reason: string | null) =>
          db.query(
            (sql) => sql`
            update webhook_endpoints set status = ${status}, suspension_reason = ${reason}, updated_at = now()
            where id = ${id}`,
          ),
        /**
         * A delivery due now, that the scheduler picks up like a manual retry's; for a suspended endpoint one held
         * as the router holds its deliveries, released with them when the endpoint is activated.
         */
        insertTestDelivery: (
          endpointId: string,
          eventId: string,
          event: string,
          ownerSlug: string,
          payload: Uint8Array,
          held: boolean,
        ) =>
          db.query(async (sql) => {
            const [row] = await sql<Array<{ id: string }>>`
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, next_retry_at,
                                            held_since)
            values (${endpointId}, ${eventId}, ${event}, ${ownerSlug}, ${Buffer.from(payload)},
                    ${held ? null : sql`now()`}, ${held ? sql`now()` : null})
            returning id::text`
            if (!held) await sql`select pg_notify(${WEBHOOK_DUE}, '')`
            return row!.id
          }),
        /** Every subscriber with its active secrets (sealed), newest first. */
        subscriberSecrets: db.query(
          (sql) => sql<Array<SubscriberSecretsRow>>`
          select s.id::text as subscriber_id, o.slug as owner_slug, o.name as owner_name, p.name as provider_name,
                 coalesce((
                   select json_agg(json_build_object(
                            'created_at', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'expires_at', to_char(w.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'sealed', encode(w.secret_sealed, 'base64'))
                          order by w.created_at desc, w.id desc)
                   from webhook_secrets w
                   where w.subscriber_id = s.id and (w.expires_at is null or w.expires_at > now())
                 ), '[]'::json) as secrets
          from webhook_subscribers s
          left join owners o on o.id = s.owner_id
          left join providers p on p.id = s.provider_id
          order by coalesce(o.slug, p.name), s.id`,
        ),
        audit: (entry: AuditEntry) => recordAudit(db, entry),
      }
    }),
  },
) {
  static readonly layer = Layer.effect(OperationsRepo, OperationsRepo.make)
}

import { Context, Effect, Layer } from "effect"
import type { FoundRow } from "../../contract/Search.ts"
import { Db, type Sql } from "../../platform/Db.ts"
import { ownersFiltered } from "../../roster/OwnerMatch.ts"
import { EventCatalog, EventNames } from "../../events/Catalog.ts"
import { type ShownDeliveryStatus, ShownDeliveryStatuses } from "../Statuses.ts"
import type { AttemptRow } from "./Repo.ts"

/**
 * What the webhooks context lets the console read of its deliveries: the delivery list, count and detail across
 * subscribers, each delivery's attempts and the secrets that signed them. A page is found first (ids only, one
 * index range under the filter that leads it, see migration 0055), then joined with what the console shows of
 * each row. The rows are this context's; readers take these types as they are.
 */

/** Statuses the console shows: the partner API's, plus `held` (its endpoint is suspended). */
export const ShownStatuses = ShownDeliveryStatuses
export type ShownStatus = ShownDeliveryStatus

/** A filter already checked; every key optional, all of them must hold. */
export interface DeliveryFilter {
  /** What was typed: the owners it names (`OwnerMatch.ts`) come in apart, as `owners`. */
  readonly owner?: string
  readonly provider?: string
  readonly endpoint?: number
  readonly event_type?: string
  readonly status?: ShownStatus
  /** Inclusive. */
  readonly since?: Date
  /** Exclusive. */
  readonly until?: Date
  readonly id?: number
  /**
   * A prospect's service id (`tpp_<n>`): deliveries of the events that carry it in their payload. Read by a scan
   * of the payloads in the endpoint set's index ranges, so only a reader that passes an endpoint set uses it.
   */
  readonly prospect?: string
}

/** Where a page starts: strictly older than this row in the list's order. */
export interface PagePosition {
  /** `created_at` in microseconds since the epoch (a JavaScript Date keeps only milliseconds). */
  readonly createdUs: bigint
  readonly id: number
}

export interface DeliveryListRow {
  readonly id: string
  readonly event: string
  readonly status: ShownStatus
  readonly owner_slug: string
  readonly owner_name: string | null
  readonly provider_name: string | null
  readonly endpoint_id: string
  readonly endpoint_name: string
  readonly destination_url: string
  readonly attempt_number: number
  readonly attempt_count: number
  readonly created_at: Date
  readonly created_us: string
  readonly last_attempted_at: Date | null
  readonly next_retry_at: Date | null
  readonly delivered_at: Date | null
  readonly last_status_code: number | null
  readonly last_failure_reason: string | null
}

export type { AttemptRow }

export interface DeliveryDetailRow extends DeliveryListRow {
  readonly payload: Buffer
  readonly subscriber_id: string
  readonly custom_headers: unknown
  /** Its event's timeline before routing (null for deliveries routed before it was recorded). */
  readonly event_accepted_at: Date | null
  readonly event_committed_at: Date | null
  readonly event_published_at: Date | null
}

export interface EventDeliveryRow {
  readonly event_id: string
  readonly id: number
  readonly endpoint_id: number
  readonly endpoint_name: string
  readonly status: string
  readonly attempt_number: number
  readonly delivered_at: Date | null
}

/** The statuses a delivery waits in, as the system page's summary counts them. */
export const WaitingStatuses = ["pending", "retrying", "rate_limited", "held"] as const
export type WaitingStatus = (typeof WaitingStatuses)[number]

/** An endpoint's deliveries not settled yet, in one waiting status, and the oldest of them. */
export interface BacklogRow {
  readonly endpoint_id: string
  readonly endpoint_name: string
  readonly owner_slug: string | null
  readonly provider_name: string | null
  readonly status: WaitingStatus
  readonly n: number
  readonly oldest_created_at: Date
}

/** An endpoint's health bucket as the delivery engine keeps it: its counts and latency histogram. */
export interface HealthBucketRow {
  readonly bucket_start: Date
  readonly attempts: number
  readonly succeeded: number
  readonly failed: number
  readonly latency: ReadonlyArray<number>
  readonly timeouts_in_row?: number | null
}

type Fragment = ReturnType<Sql>

/**
 * The rows the console shows with `status`: a held delivery keeps its stored status, a leased one reads
 * `delivering`, and one retried by hand (a later series) waiting for its first attempt reads `retrying`.
 */
const statusCondition = (sql: Sql, status: ShownStatus): Fragment => {
  switch (status) {
    case "held":
      return sql`d.held_since is not null`
    case "delivering":
      return sql`d.status in ('pending', 'retrying', 'rate_limited') and d.held_since is null
                 and d.lease_until > now()`
    case "pending":
      return sql`d.status = 'pending' and d.series = 1 and d.held_since is null
                 and (d.lease_until is null or d.lease_until <= now())`
    case "retrying":
      return sql`(d.status = 'retrying' or (d.status = 'pending' and d.series > 1)) and d.held_since is null
                 and (d.lease_until is null or d.lease_until <= now())`
    case "rate_limited":
      return sql`d.status = ${status} and d.held_since is null
                 and (d.lease_until is null or d.lease_until <= now())`
    case "delivered":
    case "failed":
      return sql`d.status = ${status}`
  }
}

/**
 * The events whose payload names a prospect by its service id (`third_party_prospect.id`, `tpp_<n>`):
 * `prospect.created` carries the partner's own id there instead.
 */
export const PROSPECT_EVENTS = EventNames.filter(
  (name) => EventCatalog[name].dataKey === "third_party_prospect" && name !== "prospect.created",
)

/** The bytes a payload holds when it names the prospect `tpp` (the payload is compact JSON). */
const prospectBytes = (tpp: string) => Buffer.from(`"id":${JSON.stringify(tpp)}`, "utf8")

/** The endpoints and owners a filter names (undefined: any), resolved before the list is read. */
export interface FilterSets {
  readonly endpoints: ReadonlyArray<number> | undefined
  readonly owners: ReadonlyArray<string> | undefined
}

/** Every condition of the filter but the endpoint set (which the caller places), joined with `and`. */
const conditions = (
  sql: Sql,
  filter: DeliveryFilter,
  owners: ReadonlyArray<string> | undefined,
  after: PagePosition | undefined,
): Fragment => {
  const parts: Array<Fragment> = []
  if (filter.id !== undefined) parts.push(sql`d.id = ${filter.id}`)
  if (owners !== undefined) parts.push(sql`d.owner_slug = any(${owners as Array<string>}::text[])`)
  if (filter.event_type !== undefined) parts.push(sql`d.event = ${filter.event_type}`)
  if (filter.status !== undefined) parts.push(statusCondition(sql, filter.status))
  if (filter.since !== undefined) parts.push(sql`d.created_at >= ${filter.since}`)
  if (filter.until !== undefined) parts.push(sql`d.created_at < ${filter.until}`)
  if (filter.prospect !== undefined) {
    parts.push(sql`d.event = any(${PROSPECT_EVENTS as Array<string>}::text[])
                   and position(${prospectBytes(filter.prospect)}::bytea in d.payload) > 0`)
  }
  if (after !== undefined) {
    parts.push(sql`(d.created_at, d.id) < (timestamptz 'epoch' + ${after.createdUs.toString()}::bigint
                                                 * interval '1 microsecond', ${after.id}::bigint)`)
  }
  return parts.reduce((all, part) => sql`${all} and ${part}`, sql`true`)
}

/** The columns of a shown delivery, over `d` joined with its endpoint `e`, subscriber `s`, provider and owner. */
const shownColumns = (sql: Sql) => sql`
  d.id, d.event,
  case when d.held_since is not null then 'held' when d.lease_until > now() then 'delivering'
       when d.status = 'pending' and d.series > 1 then 'retrying' else d.status end
    as status,
  d.owner_slug, o.name as owner_name, p.name as provider_name,
  e.id as endpoint_id, e.name as endpoint_name, e.destination_url, d.attempt_number, d.created_at,
  (extract(epoch from d.created_at) * 1000000)::bigint as created_us, d.last_attempted_at,
  case when d.lease_until > now() then null else d.next_retry_at end as next_retry_at, d.delivered_at,
  (select a.status_code from webhook_attempts a where a.delivery_id = d.id
   order by a.series desc, a.attempt_number desc limit 1) as last_status_code,
  d.last_attempt_failure_reason as last_failure_reason,
  (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as attempt_count`

const shownJoins = (sql: Sql) => sql`
  join webhook_endpoints e on e.id = d.endpoint_id
  join webhook_subscribers s on s.id = e.subscriber_id
  left join providers p on p.id = s.provider_id
  left join owners o on o.slug = d.owner_slug`

export class DeliveryReads extends Context.Service<DeliveryReads>()(
  "partner-service/webhooks/DeliveryReads",
  {
    make: Effect.gen(function* () {
      const db = yield* Db

      /** The endpoints of a provider (deleted ones too: their deliveries are still listed). */
      const providerEndpoints = (name: string) =>
        db
          .query(
            (sql) => sql<Array<{ id: string }>>`
              select e.id from providers p
              join webhook_subscribers s on s.provider_id = p.id
              join webhook_endpoints e on e.subscriber_id = s.id
              where p.name = ${name}
              order by e.id`,
          )
          .pipe(Effect.map((rows) => rows.map((row) => Number(row.id))))

      /** The slugs of the owners an owner filter names, at most `limit`. */
      const ownerSlugs = (text: string, limit: number) =>
        db
          .query(
            (sql) => sql<Array<{ slug: string }>>`
              select slug from (${ownersFiltered(sql, text)}) m order by slug limit ${limit}`,
          )
          .pipe(Effect.map((rows) => rows.map((row) => row.slug)))

      /**
       * Up to `limit` deliveries newest first, after `after`. With an endpoint set (the endpoint filter, or a
       * provider's endpoints) each endpoint's newest are read from its own index range and merged; with an owner
       * set and no endpoint set, each owner's.
       */
      const pageIds = (
        sql: Sql,
        filter: DeliveryFilter,
        { endpoints, owners }: FilterSets,
        after: PagePosition | undefined,
        limit: number,
      ) => {
        const where = conditions(sql, filter, owners, after)
        // A `delivering` row holds a lease, which no index holds (the claim writes only the lease, so it touches no
        // index). A claim takes only a due attempt: a first attempt (pending, nothing scheduled) or one whose
        // `next_retry_at` has come, so the candidates are those two sets, each read from the partial index that
        // keeps it (`webhook_deliveries_unclaimed`, `webhook_deliveries_scheduled`): what is waiting to go now,
        // not the retries scheduled for later.
        if (endpoints === undefined && filter.status === "delivering") {
          return sql`
            select id, created_at from (
              (select d.id, d.created_at from webhook_deliveries d
               where d.status in ('pending', 'retrying', 'rate_limited') and d.next_retry_at is not null
                 and d.next_retry_at <= now() + interval '1 second' and ${where}
               order by d.created_at desc, d.id desc limit ${limit})
              union all
              (select d.id, d.created_at from webhook_deliveries d
               where d.status = 'pending' and d.next_retry_at is null and ${where}
               order by d.created_at desc, d.id desc limit ${limit})
            ) d
            order by created_at desc, id desc limit ${limit}`
        }
        if (endpoints === undefined && owners !== undefined) {
          return sql`
            select d.id, d.created_at from unnest(${owners as Array<string>}::text[]) as x(owner_slug)
            cross join lateral (
              select d.id, d.created_at from webhook_deliveries d
              where d.owner_slug = x.owner_slug and ${where}
              order by d.created_at desc, d.id desc limit ${limit}
            ) d
            order by d.created_at desc, d.id desc limit ${limit}`
        }
        return endpoints === undefined
          ? sql`
            select d.id, d.created_at from webhook_deliveries d where ${where}
            order by d.created_at desc, d.id desc limit ${limit}`
          : sql`
            select d.id, d.created_at from unnest(${endpoints as Array<number>}::bigint[]) as x(endpoint_id)
            cross join lateral (
              select d.id, d.created_at from webhook_deliveries d
              where d.endpoint_id = x.endpoint_id and ${where}
              order by d.created_at desc, d.id desc limit ${limit}
            ) d
            order by d.created_at desc, d.id desc limit ${limit}`
      }

      /** A page of deliveries as the console shows them. */
      const page = (
        filter: DeliveryFilter,
        sets: FilterSets,
        after: PagePosition | undefined,
        limit: number,
      ) =>
        db.query(
          (sql) => sql<Array<DeliveryListRow>>`
            with page as materialized (${pageIds(sql, filter, sets, after, limit)})
            select ${shownColumns(sql)}
            from page join webhook_deliveries d on d.id = page.id
            ${shownJoins(sql)}
            order by d.created_at desc, d.id desc`,
        )

      /** The ids of a page only, with the position of each (a bulk retry's snapshot). */
      const ids = (
        filter: DeliveryFilter,
        sets: FilterSets,
        after: PagePosition | undefined,
        limit: number,
      ) =>
        db.query(
          (sql) => sql<Array<{ id: string; created_us: string }>>`
            select id, (extract(epoch from created_at) * 1000000)::bigint as created_us
            from (${pageIds(sql, filter, sets, after, limit)}) page
            order by created_at desc, id desc`,
        )

      const count = (filter: DeliveryFilter, { endpoints, owners }: FilterSets) =>
        db
          .query(
            (sql) => sql<Array<{ count: string }>>`
              select count(*) as count from webhook_deliveries d
              where ${conditions(sql, filter, owners, undefined)}
              ${endpoints === undefined ? sql`` : sql`and d.endpoint_id = any(${endpoints as Array<number>}::bigint[])`}`,
          )
          .pipe(Effect.map(([row]) => Number(row!.count)))

      const detail = (id: number) =>
        db
          .query(
            (sql) => sql<Array<DeliveryDetailRow>>`
              select ${shownColumns(sql)}, d.payload, e.subscriber_id, s.custom_headers, d.event_accepted_at,
                     d.event_committed_at, d.event_published_at
              from webhook_deliveries d
              ${shownJoins(sql)}
              where d.id = ${id}`,
          )
          .pipe(Effect.map(([row]) => row))

      const attempts = (id: number) =>
        db.query(
          (sql) => sql<Array<AttemptRow>>`
            select series, attempt_number, started_at, status_code, duration_ms, failure_reason, response_body
            from webhook_attempts where delivery_id = ${id}
            order by series, attempt_number`,
        )

      /** The subscriber's secrets that were active at `at`, newest first: those an attempt then signed with. */
      const secretsAt = (subscriberId: string, at: Date) =>
        db
          .query(
            (sql) => sql<Array<{ secret_sealed: Buffer }>>`
              select secret_sealed from webhook_secrets
              where subscriber_id = ${subscriberId} and created_at <= ${at}
                and (expires_at is null or expires_at > ${at})
              order by created_at desc, id desc`,
          )
          .pipe(Effect.map((rows) => rows.map((row) => row.secret_sealed)))

      /** The deliveries of the events, each with its endpoint's name. */
      const deliveriesOf = (eventIds: ReadonlyArray<string>) =>
        eventIds.length === 0
          ? Effect.succeed([] as Array<EventDeliveryRow>)
          : db.query(
              (sql) => sql<Array<EventDeliveryRow>>`
              select d.event_id, d.id::int, d.endpoint_id::int, e.name as endpoint_name, d.status,
                d.attempt_number, d.delivered_at
              from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
              where d.event_id = any(${eventIds as Array<string>}::text[]) order by d.id`,
            )
      const findDelivery = (id: string) =>
        db.query(
          (sql) => sql<Array<FoundRow>>`
          select d.id::text as id, 'Delivery ' || d.id as label,
            concat_ws(' · ', d.event, d.owner_slug, e.name, d.status) as detail
          from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
          where d.id = ${id}::bigint`,
        )

      /** The deliveries of the event `eventId` (on the `(event_id, endpoint_id)` key), at most `limit`. */
      const findEventDeliveries = (eventId: string, limit: number) =>
        db.query(
          (sql) => sql<Array<FoundRow>>`
          select d.id::text as id, 'Delivery ' || d.id || ' of event ' || d.event_id as label,
            concat_ws(' · ', d.event, d.owner_slug, e.name, d.status) as detail
          from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
          where d.event_id = ${eventId}
          order by d.id limit ${limit}`,
        )

      /** The endpoint's health buckets (`delivery/HealthBuckets.ts`) that started at or after `since`, oldest first. */
      const healthBuckets = (endpointId: number, since: Date) =>
        db.query(
          (sql) => sql<Array<HealthBucketRow>>`
            select bucket_start, attempts, succeeded, failed, latency, timeouts_in_row from webhook_endpoint_health
            where endpoint_id = ${endpointId} and bucket_start >= ${since}
            order by bucket_start`,
        )

      /** The health buckets of each endpoint in `endpointIds` that started at or after `since`. */
      const healthBucketsOf = (endpointIds: ReadonlyArray<number>, since: Date) =>
        endpointIds.length === 0
          ? Effect.succeed([] as Array<HealthBucketRow & { readonly endpoint_id: string }>)
          : db.query(
              (sql) => sql<Array<HealthBucketRow & { readonly endpoint_id: string }>>`
                select endpoint_id, bucket_start, attempts, succeeded, failed, latency
                from webhook_endpoint_health
                where endpoint_id = any(${endpointIds as Array<number>}::bigint[]) and bucket_start >= ${since}`,
            )

      /** The endpoint's deliveries not settled yet, counted on `webhook_deliveries_endpoint_status`. */
      const waiting = (endpointId: number) =>
        db
          .query(
            (sql) => sql<Array<{ n: number }>>`
              select count(*)::int as n from webhook_deliveries
              where endpoint_id = ${endpointId} and status in ('pending', 'retrying', 'rate_limited')`,
          )
          .pipe(Effect.map(([row]) => row?.n ?? 0))

      /**
       * Every delivery not settled yet (stored as pending, retrying or rate limited), counted per endpoint and
       * waiting status, with the oldest of each group. A held delivery counts as `held` whatever its stored status;
       * one retried by hand that waits for its first attempt as `retrying`; one being attempted right now under the
       * status it waits in. Read on `webhook_deliveries_endpoint_status`.
       */
      const backlog = () =>
        db.query(
          (sql) => sql<Array<BacklogRow>>`
            with waiting as (
              select d.endpoint_id, d.id, d.created_at,
                case when d.held_since is not null then 'held'
                     when d.status = 'retrying' or d.series > 1 then 'retrying'
                     when d.status = 'rate_limited' then 'rate_limited'
                     else 'pending' end as status
              from webhook_deliveries d
              where d.status in ('pending', 'retrying', 'rate_limited')
            ),
            grouped as (
              select endpoint_id, status, count(*)::int as n, min(created_at) as oldest_created_at
              from waiting group by endpoint_id, status
            )
            select g.endpoint_id, e.name as endpoint_name, o.slug as owner_slug, p.name as provider_name,
              g.status, g.n, g.oldest_created_at
            from grouped g
            join webhook_endpoints e on e.id = g.endpoint_id
            join webhook_subscribers s on s.id = e.subscriber_id
            left join owners o on o.id = s.owner_id
            left join providers p on p.id = s.provider_id
            order by g.endpoint_id, g.status`,
        )

      /** The delivery that has waited longest of those `backlog` counts, if any. */
      const oldestWaiting = () =>
        db
          .query(
            (sql) => sql<Array<{ id: string; endpoint_id: string; created_at: Date }>>`
              select id, endpoint_id, created_at from webhook_deliveries
              where status in ('pending', 'retrying', 'rate_limited')
              order by created_at, id limit 1`,
          )
          .pipe(Effect.map(([row]) => row))

      return {
        backlog,
        oldestWaiting,
        providerEndpoints,
        ownerSlugs,
        page,
        ids,
        count,
        detail,
        attempts,
        secretsAt,
        deliveriesOf,
        findDelivery,
        findEventDeliveries,
        healthBuckets,
        healthBucketsOf,
        waiting,
      }
    }),
  },
) {
  static readonly layer = Layer.effect(DeliveryReads, DeliveryReads.make)
}

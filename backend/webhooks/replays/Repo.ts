import { Context, Effect, Layer } from "effect"
import { Db } from "../../platform/Db.ts"
import type { ReplayStatus } from "./Domain.ts"

/** The replays' own SQL: their rows and events, and the batch that turns replayed events into deliveries. */

export interface ReplayRow {
  readonly id: string
  readonly endpoint_id: string
  readonly status: ReplayStatus
  readonly total: number
  readonly sent: number
  readonly since: Date
  readonly until: Date
  readonly events: Array<string>
  readonly created_at: Date
  readonly ended_at: Date | null
}

/** What an endpoint receives: the events it subscribes to, of the owners (or properties) its subscriber covers. */
export interface Coverage {
  readonly events: ReadonlyArray<string>
  /** Every event of these owners. */
  readonly ownerSlugs: ReadonlyArray<string>
  /** The events of these properties (service ids), whose owners are `propertyOwnerSlugs`. */
  readonly propertyIds: ReadonlyArray<string>
  readonly propertyOwnerSlugs: ReadonlyArray<string>
}

export interface ReplayEventInput {
  readonly seq: number
  readonly eventId: string
  readonly event: string
  readonly ownerSlug: string
  readonly payload: Uint8Array
}

/** A delivery a replay batch made: one attempt message each. */
export interface ReplayedDelivery {
  readonly id: number
  readonly endpoint_id: number
  readonly event: string
  readonly series: number
  readonly attempt_number: number
}

/** NOTIFY'd when a replay is created: the runners start its first batch at once. */
export const REPLAY_CHANNEL = "webhook_replay"

const REPLAY_COLUMNS = [
  "id",
  "endpoint_id",
  "status",
  "total",
  "sent",
  "since",
  "until",
  "events",
  "created_at",
  "ended_at",
] as const satisfies ReadonlyArray<keyof ReplayRow>

export class ReplaysRepo extends Context.Service<ReplaysRepo>()("partner-service/webhooks/ReplaysRepo", {
  make: Effect.gen(function* () {
    const db = yield* Db

    const coverage = (endpointId: string) =>
      db
        .query(
          (sql) => sql<
            Array<{
              events: Array<string>
              owners: Array<string>
              properties: Array<string>
              property_owners: Array<string>
            }>
          >`
            select e.events,
                   coalesce(array(select o.slug from owners o where o.id = s.owner_id
                                  union
                                  select o.slug from provider_owners po join owners o on o.id = po.owner_id
                                  where po.provider_id = s.provider_id), '{}') as owners,
                   coalesce(array(select pp.property_id::text from provider_properties pp
                                  where pp.provider_id = s.provider_id), '{}') as properties,
                   coalesce(array(select distinct o.slug from provider_properties pp
                                  join properties pr on pr.id = pp.property_id join owners o on o.id = pr.owner_id
                                  where pp.provider_id = s.provider_id), '{}') as property_owners
            from webhook_endpoints e join webhook_subscribers s on s.id = e.subscriber_id
            where e.id = ${endpointId} and e.deleted_at is null`,
        )
        .pipe(
          Effect.map(([row]): Coverage | undefined =>
            row === undefined
              ? undefined
              : {
                  events: row.events,
                  ownerSlugs: row.owners,
                  propertyIds: row.properties,
                  propertyOwnerSlugs: row.property_owners,
                },
          ),
        )

    /** Of `eventIds`, those the endpoint has no delivery of. */
    const undelivered = (endpointId: string, eventIds: ReadonlyArray<string>) =>
      eventIds.length === 0
        ? Effect.succeed(new Set<string>())
        : db
            .query(
              (sql) => sql<Array<{ event_id: string }>>`
                select i.event_id from unnest(${eventIds as Array<string>}::text[]) as i(event_id)
                where not exists (select 1 from webhook_deliveries d
                                  where d.event_id = i.event_id and d.endpoint_id = ${endpointId})`,
            )
            .pipe(Effect.map((rows) => new Set(rows.map((r) => r.event_id))))

    const insert = (
      endpointId: string,
      range: { readonly since: Date; readonly until: Date; readonly events: ReadonlyArray<string> },
      items: ReadonlyArray<ReplayEventInput>,
    ) =>
      db.query(async (sql) => {
        const [replay] = await sql<Array<ReplayRow>>`
          insert into webhook_replays (endpoint_id, since, until, events, total, status, ended_at)
          values (${endpointId}, ${range.since}, ${range.until}, ${sql.array([...range.events])}::text[],
                  ${items.length}, ${items.length === 0 ? "completed" : "running"},
                  ${items.length === 0 ? sql`now()` : null})
          returning ${sql(REPLAY_COLUMNS)}`
        if (items.length > 0) {
          await sql`
            insert into webhook_replay_events (replay_id, seq, event_id, event, owner_slug, payload)
            select ${replay!.id}, seq, event_id, event, owner_slug, decode(payload_hex, 'hex') from unnest(${items.map((i) => i.seq)}::bigint[],
                                                ${items.map((i) => i.eventId)}::text[],
                                                ${items.map((i) => i.event)}::text[],
                                                ${items.map((i) => i.ownerSlug)}::text[],
                                                ${items.map((i) => Buffer.from(i.payload).toString("hex"))}::text[])
              as i(seq, event_id, event, owner_slug, payload_hex)`
          await sql`select pg_notify(${REPLAY_CHANNEL}, '')`
        }
        return replay!
      })

    const find = (endpointId: string, id: string) =>
      db
        .query(
          (sql) => sql<Array<ReplayRow>>`
            select ${sql(REPLAY_COLUMNS)} from webhook_replays where id = ${id} and endpoint_id = ${endpointId}`,
        )
        .pipe(Effect.map(([row]) => row))

    /** The endpoint's newest replays, newest first. */
    const list = (endpointId: string, limit: number) =>
      db.query(
        (sql) => sql<Array<ReplayRow>>`
          select ${sql(REPLAY_COLUMNS)} from webhook_replays where endpoint_id = ${endpointId}
          order by id desc limit ${limit}`,
      )

    /** Cancels a running replay (one that ended stays as it ended); the replay, if it is the endpoint's. */
    const cancel = (endpointId: string, id: string) =>
      db
        .query(
          (sql) => sql<Array<ReplayRow>>`
            with canceled as (
              update webhook_replays set status = 'canceled', ended_at = now(), updated_at = now()
              where id = ${id} and endpoint_id = ${endpointId} and status = 'running'
              returning ${sql(REPLAY_COLUMNS)}
            ),
            dropped as (
              delete from webhook_replay_events where replay_id in (select id from canceled)
            )
            select * from canceled
            union all
            select ${sql(REPLAY_COLUMNS)} from webhook_replays
            where id = ${id} and endpoint_id = ${endpointId} and not exists (select 1 from canceled)`,
        )
        .pipe(Effect.map(([row]) => row))

    /**
     * One batch of every replay due (at most `replays` of them, skipping those another process holds): up to
     * `perReplay` of the events it still holds become deliveries and leave it (an event the endpoint got a delivery of meanwhile
     * is passed over), and the replay is due again `pauseMs` later, completed once nothing is left, canceled if its
     * endpoint was disabled or deleted. A suspended endpoint's replay waits. The deliveries made.
     */
    const runDue = (now: Date, replays: number, perReplay: number, pauseMs: number) =>
      db
        .query(
          (sql) => sql<
            Array<{ id: string; endpoint_id: string; event: string; series: number; attempt_number: number }>
          >`
          with due as (
            select r.id, r.endpoint_id, e.status as endpoint_status, e.deleted_at is not null as deleted
            from webhook_replays r join webhook_endpoints e on e.id = r.endpoint_id
            where r.status = 'running' and r.next_batch_at <= ${now}
            order by r.next_batch_at
            limit ${replays}
            for update of r skip locked
          ),
          batch as (
            select x.replay_id, x.seq, x.event_id, x.event, x.owner_slug, x.payload, d.endpoint_id
            from due d cross join lateral (
              select * from webhook_replay_events x
              where x.replay_id = d.id
              order by x.seq limit ${perReplay}
            ) x
            where d.endpoint_status = 'active' and not d.deleted
          ),
          -- An event sent (or passed over) leaves the replay, and so do those of a replay that ends canceled: only
          -- what a running replay still has to send is kept.
          taken as (
            delete from webhook_replay_events x using batch b
            where x.replay_id = b.replay_id and x.seq = b.seq
          ),
          dropped as (
            delete from webhook_replay_events x using due d
            where x.replay_id = d.id and (d.deleted or d.endpoint_status = 'disabled')
          ),
          created as (
            insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, dispatched_at)
            select endpoint_id, event_id, event, owner_slug, payload, ${now}::timestamptz from batch
            order by replay_id, seq
            on conflict (event_id, endpoint_id) do nothing
            returning id, endpoint_id, event_id, event, series, attempt_number
          ),
          counted as (
            select b.replay_id, count(c.id) as sent
            from batch b left join created c on c.event_id = b.event_id and c.endpoint_id = b.endpoint_id
            group by b.replay_id
          ),
          updated as (
            update webhook_replays r set
              sent = r.sent + coalesce(c.sent, 0),
              status = case
                when d.deleted or d.endpoint_status = 'disabled' then 'canceled'
                when not exists (select 1 from webhook_replay_events x where x.replay_id = r.id
                                 and x.seq > coalesce((select max(b.seq) from batch b where b.replay_id = r.id), -1))
                  then 'completed'
                else 'running' end,
              ended_at = case
                when d.deleted or d.endpoint_status = 'disabled' then ${now}::timestamptz
                when not exists (select 1 from webhook_replay_events x where x.replay_id = r.id
                                 and x.seq > coalesce((select max(b.seq) from batch b where b.replay_id = r.id), -1))
                  then ${now}::timestamptz
                end,
              next_batch_at = ${new Date(now.getTime() + pauseMs)}::timestamptz,
              updated_at = ${now}::timestamptz
            from due d left join counted c on c.replay_id = d.id
            where r.id = d.id
            returning r.id
          )
          -- Every statement of a WITH runs to completion whether read or not: taken, dropped and updated need no reader.
          select c.id, c.endpoint_id, c.event, c.series, c.attempt_number from created c`,
        )
        .pipe(
          Effect.map((rows) =>
            rows.map((r): ReplayedDelivery => ({
              id: Number(r.id),
              endpoint_id: Number(r.endpoint_id),
              event: r.event,
              series: Number(r.series),
              attempt_number: Number(r.attempt_number),
            })),
          ),
        )

    return { coverage, undelivered, insert, find, list, cancel, runDue }
  }),
}) {
  static readonly layer = Layer.effect(ReplaysRepo, ReplaysRepo.make)
}

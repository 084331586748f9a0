import { Context, Effect, Layer } from "effect"
import { Db } from "../../platform/Db.ts"

/** The router's SQL: one statement routes a batch of events to a delivery per subscribed endpoint. */

export interface EventToRoute {
  readonly eventId: string
  readonly event: string
  readonly ownerSlug: string
  readonly propertyId: string | null
  /** The exact body, UTF-8 JSON, as published. */
  readonly payload: Uint8Array
  /**
   * Its message was delivered before: an earlier routing may have recorded deliveries and stopped before
   * announcing them. Only then are its deliveries still pending looked up (and announced again).
   */
  readonly redelivered: boolean
  /** The trace context its deliveries' attempts continue (only while traces are exported). */
  readonly traceparent?: string | null
  /** Its timeline before routing: when its work was accepted and written (the outbox's), and when JetStream stored it. */
  readonly acceptedAt: Date | null
  readonly committedAt: Date | null
  readonly publishedAt: Date
}

/** A delivery the router made (or found still pending) for an event: one attempt message each. */
export interface RoutedDelivery {
  readonly event_id: string
  readonly id: number
  readonly endpoint_id: number
  readonly series: number
  readonly attempt_number: number
  readonly created: boolean
  /** Recorded for a suspended endpoint: no attempt until the endpoint is active again (the scheduler releases it). */
  readonly held: boolean
}

const int = (value: unknown) => Number(value)

export class RouterRepo extends Context.Service<
  RouterRepo,
  {
    /**
     * Deliveries for a batch of events (each event's rows carry its `event_id`): those it creates, and those of
     * redelivered events still pending.
     */
    readonly route: (
      events: ReadonlyArray<EventToRoute>,
      now: Date,
    ) => Effect.Effect<ReadonlyArray<RoutedDelivery>>
  }
>()("partner-service/webhooks/RouterRepo") {
  static readonly layer = Layer.effect(
    RouterRepo,
    Effect.gen(function* () {
      const db = yield* Db

      const route = Effect.fn("RouterRepo.route")(function* (events: ReadonlyArray<EventToRoute>, now: Date) {
        if (events.length === 0) return []
        const again = events.filter((e) => e.redelivered).map((e) => e.eventId)
        const rows = yield* db.query(
          (sql) => sql`
            with input as (
              select * from unnest(${events.map((e) => e.eventId)}::text[], ${events.map((e) => e.event)}::text[],
                                   ${events.map((e) => e.ownerSlug)}::text[],
                                   ${events.map((e) => e.propertyId)}::bigint[],
                                   ${events.map((e) => Buffer.from(e.payload.buffer, e.payload.byteOffset, e.payload.byteLength).toString("hex"))}::text[],
                                   ${events.map((e) => e.traceparent ?? null)}::text[],
                                   ${events.map((e) => e.acceptedAt?.toISOString() ?? null)}::timestamptz[],
                                   ${events.map((e) => e.committedAt?.toISOString() ?? null)}::timestamptz[],
                                   ${events.map((e) => e.publishedAt.toISOString())}::timestamptz[])
                as i(event_id, event, owner_slug, property_id, payload, traceparent, accepted_at, committed_at,
                     published_at)
            ),
            subscribers as (
              select i.event_id, s.id as subscriber_id from input i
              join owners o on o.slug = i.owner_slug
              join webhook_subscribers s on s.owner_id = o.id
              union
              select i.event_id, s.id from input i
              join owners o on o.slug = i.owner_slug
              join provider_owners po on po.owner_id = o.id
              join webhook_subscribers s on s.provider_id = po.provider_id
              union
              select i.event_id, s.id from input i
              join provider_properties pp on pp.property_id = i.property_id
              join webhook_subscribers s on s.provider_id = pp.provider_id
            ),
            targets as (
              select i.event_id, i.event, i.owner_slug, i.payload, i.traceparent, i.accepted_at, i.committed_at,
                     i.published_at, e.id as endpoint_id,
                     e.status = 'suspended' as held
              from subscribers sub
              join input i on i.event_id = sub.event_id
              join webhook_endpoints e on e.subscriber_id = sub.subscriber_id
              where e.status in ('active', 'suspended') and e.deleted_at is null and i.event = any(e.events)
            ),
            created as (
              -- A suspended endpoint's delivery is recorded held and not announced: its endpoint's activation
              -- releases it (the scheduler makes it due), a disable or delete fails it.
              insert into webhook_deliveries (endpoint_id, event_id, event, owner_slug, payload, traceparent,
                                              event_accepted_at, event_committed_at, event_published_at,
                                              dispatched_at, held_since)
              select endpoint_id, event_id, event, owner_slug, decode(payload, 'hex'), traceparent,
                     accepted_at, committed_at, published_at,
                     case when held then null else ${now}::timestamptz end,
                     case when held then ${now}::timestamptz end
              from targets order by event_id, endpoint_id
              on conflict (event_id, endpoint_id) do nothing
              returning id, endpoint_id, event_id, series, attempt_number, held_since is not null as held
            )
            select id, endpoint_id, event_id, series, attempt_number, true as created, held from created
            ${
              again.length === 0
                ? sql``
                : sql`
                  union all
                  select id, endpoint_id, event_id, series, attempt_number, false, false from webhook_deliveries
                  where event_id = any(${again}::text[]) and status = 'pending' and held_since is null`
            }`,
        )
        return rows.map((r): RoutedDelivery => ({
          event_id: r.event_id as string,
          id: int(r.id),
          endpoint_id: int(r.endpoint_id),
          series: int(r.series),
          attempt_number: int(r.attempt_number),
          created: r.created === true,
          held: r.held === true,
        }))
      })

      return RouterRepo.of({ route })
    }),
  )
}

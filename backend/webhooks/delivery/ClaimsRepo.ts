import { Effect } from "effect"
import { Db } from "../../platform/Db.ts"

/**
 * What a claim decided: make the attempt, postpone it (rate limit), hold it (endpoint suspended), or fail it
 * (endpoint disabled or deleted, or the attempt its previous claimer may have made was the last one).
 */
export type ClaimDecision =
  "delivering" | "rate_limited" | "deferred" | "held" | "disabled" | "deleted" | "exhausted"

export interface ClaimedAttempt {
  readonly decision: ClaimDecision
  readonly id: number
  readonly endpoint_id: number
  readonly event: string
  readonly payload: Buffer
  readonly series: number
  readonly attempt_number: number
  readonly destination_url: string
  readonly subscriber_id: number
  readonly custom_headers: unknown
  /**
   * The subscriber's newest secret id and count of active secrets: a cached set of secrets with another version
   * is stale (a rotation added one, or one expired).
   */
  readonly secrets_version: string | null
}

/** The attempt a message names. */
export interface AttemptKey {
  readonly deliveryId: number
  readonly series: number
  readonly attempt: number
}

/**
 * A claim to make: `deferUntil` set when the attempt would go over its endpoint's in-flight cap; it is then not
 * made, not counted (neither as an attempt nor against the rate limit) and due again at that time.
 */
export interface ClaimKey extends AttemptKey {
  readonly deferUntil: Date | null
}

/** When a batch of claims is made, and the policy they apply. */
export interface ClaimTimes {
  readonly now: Date
  /** A due attempt whose message arrives this early is still taken (the scheduler publishes when due). */
  readonly dueBy: Date
  /**
   * The rate limit's slot, one backoff unit long (epoch seconds in production; the table's columns still say
   * second), and its attempts per 60 slots.
   */
  readonly slot: number
  readonly rateLimit: number
  readonly leaseUntil: Date
  /** How long a claim's lease lasts: a lease that ran out started that long before it ended. */
  readonly leaseMs: number
  /** The claiming process (`webhook_claimers`): a lease whose process is no longer alive has run out. */
  readonly claimer: string
  readonly rateLimitedUntil: Date
  readonly maxAttempts: number
}

export const ENDPOINT_FAILURE_REASONS = {
  deleted: "Endpoint deleted; delivery canceled",
  disabled: "Endpoint is disabled",
} as const

/**
 * The attempt of a claim whose lease ran out with no outcome: its process stopped after the claim, perhaps after
 * the request reached the receiver, so it is recorded (and counted) as an attempt whose outcome is unknown.
 */
export const UNKNOWN_OUTCOME_REASON = "The process stopped during the attempt; its outcome is unknown"

const int = (value: unknown) => Number(value)

/**
 * The claim of a batch of attempts, in one statement: the endpoint check, the rate limit and the record of an
 * attempt its previous claimer may have made before it stopped.
 */
export const makeClaimsRepo = Effect.gen(function* () {
  const db = yield* Db

  const claim = Effect.fn("DeliveryRepo.claim")(function* (keys: ReadonlyArray<ClaimKey>, times: ClaimTimes) {
    if (keys.length === 0) return []
    // Rows locked in id order and rate counters upserted in endpoint order, so concurrent batches cannot deadlock.
    // A row still holding a lease that ran out was claimed by a process that stopped before recording an
    // outcome (`abandoned`): that attempt is recorded with an unknown outcome, and this claim is the next one.
    // Only attempts to be made are counted against the endpoint's window; each endpoint's are granted in id
    // order.
    const rows = yield* db.query(
      (sql) => sql`
        with input as (
          select * from unnest(${keys.map((k) => k.deliveryId)}::bigint[], ${keys.map((k) => k.series)}::int[],
                               ${keys.map((k) => k.attempt)}::int[],
                               ${keys.map((k) => k.deferUntil?.toISOString() ?? null)}::timestamptz[])
            as i(id, series, attempt, defer_until)
        ),
        target as (
          select d.id, d.endpoint_id, d.event, d.payload, d.series, d.attempt_number, d.lease_until, i.defer_until,
                 e.destination_url, e.subscriber_id, e.status as endpoint_status,
                 e.deleted_at is not null as endpoint_deleted
          from webhook_deliveries d
          join input i on i.id = d.id and i.series = d.series and i.attempt = d.attempt_number
          join webhook_endpoints e on e.id = d.endpoint_id
          where d.status in ('pending', 'retrying', 'rate_limited')
            and (d.next_retry_at is null or d.next_retry_at <= ${times.dueBy})
            and (d.lease_until is null or d.lease_until <= ${times.now}
                 or d.claimed_by is not null and not exists (
                   select 1 from webhook_claimers c
                   where c.id = d.claimed_by and c.alive_until > ${times.now}))
          order by d.id
          for update of d
        ),
        screened as (
          select t.*, t.lease_until is not null as abandoned, case
            when t.endpoint_deleted then 'deleted'
            when t.endpoint_status = 'disabled' then 'disabled'
            when t.lease_until is not null and t.attempt_number >= ${times.maxAttempts} then 'exhausted'
            when t.endpoint_status <> 'active' then 'held'
            end as settled
          from target t
        ),
        usable as (
          select endpoint_id, count(*)::int as n from screened
          where settled is null and defer_until is null group by endpoint_id
        ),
        counted as (
          -- A new endpoint's row: only this slot counted (the conflict path takes from the window).
          insert into webhook_rate_limits as r (endpoint_id, latest_second, counts, total, granted)
          select u.endpoint_id, ${times.slot}::bigint,
                 array_fill(0, array[${times.slot % 61}::int]) || least(u.n, ${times.rateLimit})
                   || array_fill(0, array[${60 - (times.slot % 61)}::int]),
                 least(u.n, ${times.rateLimit}), least(u.n, ${times.rateLimit})
          from usable u
          order by u.endpoint_id
          on conflict (endpoint_id) do update set (latest_second, counts, total, granted) = (
            select t.new_latest, t.new_counts, t.new_total, t.granted
            from webhook_rate_take(r.counts, r.total, r.latest_second, excluded.latest_second,
                                   excluded.granted, ${times.rateLimit}) t)
          returning endpoint_id, granted
        ),
        decided as (
          select s.*, coalesce(s.settled, case
            when s.defer_until is not null then 'deferred'
            when row_number() over (partition by s.endpoint_id, s.settled is null and s.defer_until is null
                                    order by s.id) <= c.granted
              then 'delivering'
            else 'rate_limited' end) as decision
          from screened s
          left join counted c on c.endpoint_id = s.endpoint_id
        ),
        placed as (
          select dc.*, case when dc.abandoned and dc.decision in ('delivering', 'rate_limited', 'deferred', 'held')
                            then dc.attempt_number + 1 else dc.attempt_number end as next_attempt,
                 dc.lease_until - ${times.leaseMs} * interval '1 millisecond' as abandoned_at
          from decided dc
        ),
        updated as (
          update webhook_deliveries d set
            status = case p.decision when 'delivering' then d.status when 'held' then d.status
              when 'deferred' then d.status
              when 'rate_limited' then 'rate_limited' else 'failed' end,
            attempt_number = p.next_attempt,
            next_retry_at = case p.decision
              when 'delivering' then d.next_retry_at
              when 'rate_limited' then ${times.rateLimitedUntil}::timestamptz
              when 'deferred' then p.defer_until
              else null end,
            lease_until = case p.decision when 'delivering' then ${times.leaseUntil}::timestamptz end,
            claimed_by = case p.decision when 'delivering' then ${times.claimer}::uuid end,
            held_since = case p.decision when 'held' then coalesce(d.held_since, ${times.now}::timestamptz) end,
            last_attempted_at = case when p.abandoned then p.abandoned_at else d.last_attempted_at end,
            duration_ms = case when p.abandoned then null else d.duration_ms end,
            last_attempt_failure_reason = case p.decision
              when 'deleted' then ${ENDPOINT_FAILURE_REASONS.deleted}
              when 'disabled' then ${ENDPOINT_FAILURE_REASONS.disabled}
              when 'exhausted' then ${UNKNOWN_OUTCOME_REASON}
              else case when p.abandoned then ${UNKNOWN_OUTCOME_REASON} else d.last_attempt_failure_reason end
              end,
            updated_at = now()
          from placed p where d.id = p.id
          returning d.id
        ),
        unknown as (
          insert into webhook_attempts (delivery_id, series, attempt_number, started_at, failure_reason)
          select id, series, attempt_number, abandoned_at, ${UNKNOWN_OUTCOME_REASON} from placed
          where abandoned order by id
          on conflict do nothing
        )
        select p.decision, p.id, p.endpoint_id, p.event, p.payload, p.series, p.attempt_number as named_attempt,
               p.next_attempt as attempt_number,
               p.destination_url, p.subscriber_id, s.custom_headers,
               (select max(ws.id) || '/' || count(*) filter (where ws.expires_at is null
                                                                or ws.expires_at > ${times.now})
                from webhook_secrets ws where ws.subscriber_id = p.subscriber_id) as secrets_version
        from placed p
        join webhook_subscribers s on s.id = p.subscriber_id`,
    )
    // By the attempt the message named: after an abandoned claim, the attempt to make is the next one.
    const byKey = new Map(
      rows.map((row) => [
        `${int(row.id)}/${int(row.series)}/${int(row.named_attempt)}`,
        {
          decision: row.decision as ClaimDecision,
          id: int(row.id),
          endpoint_id: int(row.endpoint_id),
          event: row.event as string,
          payload: row.payload as Buffer,
          series: int(row.series),
          attempt_number: int(row.attempt_number),
          destination_url: row.destination_url as string,
          subscriber_id: int(row.subscriber_id),
          custom_headers: row.custom_headers as unknown,
          secrets_version: (row.secrets_version as string | null) ?? null,
        } satisfies ClaimedAttempt,
      ]),
    )
    return keys.map((key) => byKey.get(`${key.deliveryId}/${key.series}/${key.attempt}`))
  })

  return { claim }
})

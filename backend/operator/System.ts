import { Clock, Context, Effect, Layer } from "effect"
import { recordAudit } from "../audit/Audit.ts"
import { Db } from "../platform/Db.ts"
import { reportedLoopPasses } from "../platform/LoopPasses.ts"
import { outboxBacklog } from "../platform/Outbox.ts"
import {
  type DeadLetterRow,
  deadLetterCount,
  latestDeadLetters,
  lockDeadLetter,
  markDeadLetterRetried,
} from "../platform/DeadLetters.ts"
import { Nats, type StreamReport } from "../platform/Nats.ts"
import { metrics, systemSamplerLayer } from "../platform/Observability.ts"
import type {
  BacklogEndpoint,
  DeadLetter,
  DeliveryBacklog,
  LoopPass,
  OutboxState,
  SystemAnswer,
  SystemStream,
  SystemThresholds,
} from "./SystemApi.ts"
import { DeadLetterNotFound } from "./Domain.ts"
import { type BacklogRow, DeliveryReads } from "../webhooks/endpoints/DeliveryReads.ts"

/**
 * Where work piles up, for the console's system page and for `/metrics`: every stream and durable consumer as
 * JetStream reports them, the outbox's unpublished rows, the webhook deliveries not settled yet (read through the
 * webhooks context's `DeliveryReads`: they wait in Postgres, where no consumer's count shows them), and the dead
 * letters, which an operator may publish again.
 */

/**
 * Past these a consumer or the outbox is flagged. A healthy consumer's oldest unacknowledged message is seconds
 * old (handlers take milliseconds; a retry waits in Postgres, not in JetStream), and the relay publishes a row
 * within a second of its commit; the counts leave room for a burst (a roster batch, a bulk retry). The alert
 * rules (`infra/prometheus/alerts.yml`) fire on the same figures held for a few minutes.
 */
export const THRESHOLDS: SystemThresholds = {
  consumer_pending: 10_000,
  consumer_oldest_seconds: 300,
  outbox_backlog: 10_000,
  outbox_oldest_seconds: 60,
  loop_pass_seconds: 60,
}

const DEAD_LETTERS_SHOWN = 100

const deadLetterView = (row: DeadLetterRow): DeadLetter => ({
  id: Number(row.id),
  actor: row.actor,
  stream: row.stream,
  stream_seq: Number(row.stream_seq),
  subject: row.subject,
  reason: row.reason,
  delivery_count: row.delivery_count,
  created_at: row.created_at.toISOString(),
  retries: row.retries,
  retried_at: row.retried_at?.toISOString() ?? null,
})

const secondsSince = (at: Date | undefined, now: number) =>
  at === undefined ? null : Math.max(0, Math.round((now - at.getTime()) / 1000))

const consumerFlag = (pending: number, oldestSeconds: number | null) =>
  pending > THRESHOLDS.consumer_pending
    ? `more than ${THRESHOLDS.consumer_pending} messages pending`
    : oldestSeconds !== null && oldestSeconds > THRESHOLDS.consumer_oldest_seconds
      ? `oldest unacknowledged message older than ${THRESHOLDS.consumer_oldest_seconds} s`
      : null

const streamView = (stream: StreamReport, now: number): SystemStream => ({
  name: stream.name,
  subjects: stream.subjects,
  messages: stream.messages,
  bytes: stream.bytes,
  first_seq: stream.firstSeq,
  last_seq: stream.lastSeq,
  limits: {
    max_messages: stream.limits.maxMessages,
    max_bytes: stream.limits.maxBytes,
    max_age_seconds: stream.limits.maxAgeSeconds,
    discard: stream.limits.discard,
  },
  consumers: stream.consumers.map((c) => {
    const oldest = secondsSince(c.oldestUnacknowledgedAt, now)
    return {
      name: c.name,
      pending: c.pending,
      ack_pending: c.ackPending,
      redelivered: c.redelivered,
      oldest_unacknowledged_at: c.oldestUnacknowledgedAt?.toISOString() ?? null,
      oldest_unacknowledged_seconds: oldest,
      last_active_at: c.lastActiveAt?.toISOString() ?? null,
      flag: consumerFlag(c.pending, oldest),
    }
  }),
})

/** How many endpoints the summary names, those with the most deliveries waiting. */
export const BACKLOG_ENDPOINTS_SHOWN = 5

/** The webhook backlog's summary from its rows per endpoint and status (`DeliveryReads.backlog`). */
export const backlogView = (
  rows: ReadonlyArray<BacklogRow>,
  oldest: { id: string; endpoint_id: string; created_at: Date } | undefined,
  now: number,
): DeliveryBacklog => {
  const totals = { waiting: 0, pending: 0, retrying: 0, rate_limited: 0, held: 0 }
  const byEndpoint = new Map<string, { -readonly [K in keyof BacklogEndpoint]: BacklogEndpoint[K] }>()
  for (const row of rows) {
    totals[row.status] += row.n
    totals.waiting += row.n
    const seen = byEndpoint.get(row.endpoint_id)
    const at = row.oldest_created_at
    if (seen === undefined) {
      byEndpoint.set(row.endpoint_id, {
        endpoint_id: Number(row.endpoint_id),
        endpoint_name: row.endpoint_name,
        owner_slug: row.owner_slug,
        provider_name: row.provider_name,
        waiting: row.n,
        pending: 0,
        retrying: 0,
        rate_limited: 0,
        held: 0,
        [row.status]: row.n,
        oldest_at: at.toISOString(),
        oldest_seconds: secondsSince(at, now) ?? 0,
      })
    } else {
      seen[row.status] += row.n
      seen.waiting += row.n
      if (at.toISOString() < seen.oldest_at) {
        seen.oldest_at = at.toISOString()
        seen.oldest_seconds = secondsSince(at, now) ?? 0
      }
    }
  }
  const endpoints = [...byEndpoint.values()].sort(
    (a, b) =>
      b.waiting - a.waiting || a.oldest_at.localeCompare(b.oldest_at) || a.endpoint_id - b.endpoint_id,
  )
  return {
    ...totals,
    oldest:
      oldest === undefined
        ? null
        : {
            id: Number(oldest.id),
            endpoint_id: Number(oldest.endpoint_id),
            created_at: oldest.created_at.toISOString(),
            seconds: secondsSince(oldest.created_at, now) ?? 0,
          },
    endpoint_count: endpoints.length,
    endpoints: endpoints.slice(0, BACKLOG_ENDPOINTS_SHOWN),
  }
}

/** Headers a retry leaves out: its own `Nats-Msg-Id` replaces the original's, which JetStream may still hold. */
const DROPPED_HEADERS = new Set(["nats-msg-id"])

export class System extends Context.Service<System>()("partner-service/operator/System", {
  make: Effect.gen(function* () {
    const db = yield* Db
    const nats = yield* Nats
    const deliveryReads = yield* DeliveryReads

    const outbox = Effect.fn("System.outbox")(function* (now: number) {
      const { backlog, oldest: oldestAt } = yield* outboxBacklog(db)
      const oldest = secondsSince(oldestAt ?? undefined, now)
      return {
        backlog,
        oldest_at: oldestAt?.toISOString() ?? null,
        oldest_seconds: oldest,
        flag:
          backlog > THRESHOLDS.outbox_backlog
            ? `more than ${THRESHOLDS.outbox_backlog} rows unpublished`
            : oldest !== null && oldest > THRESHOLDS.outbox_oldest_seconds
              ? `oldest unpublished row older than ${THRESHOLDS.outbox_oldest_seconds} s`
              : null,
      } satisfies OutboxState
    })

    /** Every workers process's loops, as the processes last reported them (`platform/LoopPasses.ts`). */
    const loops = (now: number) =>
      reportedLoopPasses(db).pipe(
        Effect.map((rows) =>
          rows.map((row): LoopPass => {
            const ago = secondsSince(row.passed_at, now) ?? 0
            return {
              loop: row.loop,
              process: row.process,
              passed_at: row.passed_at.toISOString(),
              seconds_ago: ago,
              flag:
                ago > THRESHOLDS.loop_pass_seconds
                  ? `no pass for more than ${THRESHOLDS.loop_pass_seconds} s`
                  : null,
            }
          }),
        ),
      )

    /** Everything the system page shows, read now. */
    const status = Effect.fn("System.status")(function* () {
      const started = yield* Clock.currentTimeMillis
      const [streams, box, passes, total, deadLetters, backlog, oldest] = yield* Effect.all(
        [
          nats.streamReports,
          outbox(started),
          loops(started),
          deadLetterCount(db),
          latestDeadLetters(db, DEAD_LETTERS_SHOWN),
          deliveryReads.backlog(),
          deliveryReads.oldestWaiting(),
        ],
        { concurrency: "unbounded" },
      )
      const now = yield* Clock.currentTimeMillis
      return {
        checked_at: new Date(now).toISOString(),
        thresholds: THRESHOLDS,
        deliveries: backlogView(backlog, oldest, now),
        streams: streams.map((s) => streamView(s, now)),
        outbox: box,
        loops: passes,
        dead_letters: { total, items: deadLetters.map(deadLetterView) },
      } satisfies SystemAnswer
    })

    /**
     * Publishes a dead letter again on its subject, with its headers and body, under a message id of its own, so
     * its actor reads it as a new message; counted on the row and audited in one transaction. A publish that
     * JetStream did not acknowledge leaves nothing changed.
     */
    const retryDeadLetter = Effect.fn("System.retryDeadLetter")(function* (id: string, actor: string) {
      if (!/^\d{1,18}$/.test(id)) return yield* new DeadLetterNotFound()
      return yield* db.transaction(
        Effect.gen(function* () {
          const row = yield* lockDeadLetter(db, id)
          if (row === undefined) return yield* new DeadLetterNotFound()
          const headers = Object.fromEntries(
            Object.entries(row.headers).filter(([key]) => !DROPPED_HEADERS.has(key.toLowerCase())),
          )
          const ack = yield* nats.publish(nats.subject(row.subject), row.payload, {
            msgID: `dead-letter-${row.id}-retry-${row.retries + 1}`,
            headers,
          })
          const after = yield* markDeadLetterRetried(db, id)
          yield* recordAudit(db, {
            actor,
            action: "dead_letters.retry",
            target: `dead_letter:${row.id}`,
            before: { retries: row.retries },
            after: { retries: after.retries },
            details: {
              actor: row.actor,
              subject: row.subject,
              reason: row.reason,
              stream: ack.stream,
              stream_seq: ack.seq,
            },
          })
          return deadLetterView(after)
        }),
      )
    })

    /** Sets the gauges of `/metrics` from one reading; series of consumers that are gone are dropped. */
    const sample = Effect.fn("System.sample")(function* () {
      // The gauges need no webhook backlog: its scan of every unsettled delivery is left to the page.
      const started = yield* Clock.currentTimeMillis
      const [streams, box, total] = yield* Effect.all(
        [nats.streamReports, outbox(started), deadLetterCount(db)],
        { concurrency: "unbounded" },
      )
      const now = yield* Clock.currentTimeMillis
      const answer = {
        checked_at: new Date(now).toISOString(),
        streams: streams.map((s) => streamView(s, now)),
        outbox: box,
        dead_letters: { total },
      }
      const consumerGauges = [
        metrics.consumerPending,
        metrics.consumerAckPending,
        metrics.consumerRedelivered,
        metrics.consumerOldestSeconds,
      ]
      for (const g of [
        metrics.streamMessages,
        metrics.streamBytes,
        metrics.streamMaxBytes,
        ...consumerGauges,
      ])
        g.reset()
      for (const stream of answer.streams) {
        metrics.streamMessages.set({ stream: stream.name }, stream.messages)
        metrics.streamBytes.set({ stream: stream.name }, stream.bytes)
        metrics.streamMaxBytes.set({ stream: stream.name }, stream.limits.max_bytes)
        for (const c of stream.consumers) {
          const labels = { stream: stream.name, consumer: c.name }
          metrics.consumerPending.set(labels, c.pending)
          metrics.consumerAckPending.set(labels, c.ack_pending)
          metrics.consumerRedelivered.set(labels, c.redelivered)
          metrics.consumerOldestSeconds.set(labels, c.oldest_unacknowledged_seconds ?? 0)
        }
      }
      metrics.outboxBacklog.set(answer.outbox.backlog)
      metrics.outboxOldestSeconds.set(answer.outbox.oldest_seconds ?? 0)
      metrics.deadLetters.set(answer.dead_letters.total)
      metrics.systemSampledAt.set(Date.parse(answer.checked_at) / 1000)
    })

    return { status, retryDeadLetter, sample }
  }),
}) {
  static readonly layer = Layer.effect(System, System.make).pipe(Layer.provide(DeliveryReads.layer))

  /**
   * In every process: the gauges of `/metrics` read at each scrape (`systemSamplerLayer`); a reading that fails or
   * takes over 5 s is logged and leaves the previous figures, with their older `system_sample_timestamp_seconds`.
   */
  static readonly gaugesLayer = Layer.unwrap(
    Effect.map(Effect.service(System), (system) =>
      systemSamplerLayer(
        system.sample().pipe(
          Effect.timeout("5 seconds"),
          Effect.catchCause((cause) =>
            Effect.logWarning("system gauges not sampled").pipe(
              Effect.annotateLogs({ cause: String(cause) }),
            ),
          ),
        ),
      ),
    ),
  )
}

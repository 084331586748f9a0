import { Context, Effect, Layer, Schedule, Schema } from "effect"
import { Db, type DbShape } from "./Db.ts"
import { Nats, type NatsShape } from "./Nats.ts"
import { metrics } from "./Observability.ts"
import { OUTBOX_PARTITIONS, partitionOf } from "./Partition.ts"
import { continueTrace, currentTraceparent, TRACEPARENT, Traced, traceparentOf } from "./Tracing.ts"
import { logFailedPass, unavailableIn } from "./Unavailable.ts"
import { wakeLoop } from "./WakeLoop.ts"

export interface OutboxMessage {
  /**
   * Subject (`docs/architecture.md`) without the deployment prefix, partition token included where the reader
   * needs one.
   */
  readonly subject: string
  /** Messages with one key are published in the order their transactions committed. */
  readonly key: string
  readonly payload: unknown
  readonly headers?: Readonly<Record<string, string>>
  /**
   * When the work behind the message was accepted (RFC 3339), if not in this transaction: an event the ingestion
   * gateway received earlier. Without it, the `AcceptedAt` of the fiber, else the transaction's start.
   */
  readonly acceptedAt?: string
  /**
   * The payload's schema: the outbox encodes the payload through it, excess properties refused, so a producer
   * that builds a body its readers would refuse fails in its own transaction (and its own tests), not downstream.
   */
  readonly schema?: Schema.Encoder<unknown>
}

/** The payload as published: encoded through the message's schema when it has one; a refusal is a defect. */
const encodePayload = (m: OutboxMessage) =>
  m.schema === undefined
    ? Effect.succeed(m.payload)
    : Schema.encodeUnknownEffect(m.schema)(m.payload, { onExcessProperty: "error" }).pipe(
        Effect.catch((error) =>
          Effect.die(new Error(`outbox message on ${m.subject} breaks its schema: ${error.message}`)),
        ),
      )

/** Headers every relayed message carries: when its work was accepted and when its row was written (RFC 3339). */
export const ACCEPTED_AT_HEADER = "Outbox-Accepted-At"
export const WRITTEN_AT_HEADER = "Outbox-Written-At"

/**
 * The acceptance time the messages a fiber writes inherit: an actor handling a message sets it from the message's
 * `Outbox-Accepted-At`, so what it writes in turn dates from the partner's request, not from its own transaction.
 */
export const AcceptedAt = Context.Reference<string | undefined>(
  "partner-service/platform/Outbox/AcceptedAt",
  {
    defaultValue: () => undefined,
  },
)

const CHANNEL = "outbox"
const BATCH = 500
const POLL_INTERVAL = "1 second"
/**
 * The longest one batch may take (its publishes wait for JetStream's acknowledgements, its statements for
 * Postgres); past it the pass is abandoned and tried again, rather than wait on a connection that died silently.
 */
const PASS_TIMEOUT = "30 seconds"
const PRUNE_INTERVAL = "1 minute"
const RETENTION = "1 hour"

export class Outbox extends Context.Service<
  Outbox,
  {
    /** Writes messages on the caller's transaction; they are published only if it commits. */
    readonly enqueue: (messages: ReadonlyArray<OutboxMessage>) => Effect.Effect<void>
  }
>()("partner-service/platform/Outbox") {
  static readonly layer = Layer.effect(
    Outbox,
    Effect.gen(function* () {
      const db = yield* Db
      const traced = yield* Traced
      const enqueue = Effect.fn("Outbox.enqueue")(function* (messages: ReadonlyArray<OutboxMessage>) {
        if (messages.length === 0) return
        const traceparent = traced ? ((yield* currentTraceparent) ?? null) : null
        const inherited = (yield* AcceptedAt) ?? null
        const payloads = yield* Effect.forEach(messages, (m) =>
          Effect.map(encodePayload(m), (payload) => JSON.stringify(payload)),
        )
        // One round trip: the rows and the wake-up, which Postgres delivers on commit, when the rows are visible.
        // A column per array, so the statement is the same (and prepared once) whatever the number of rows; the
        // payload goes as its JSON text and is stored as that text's UTF-8 bytes.
        yield* db.query(
          (sql) => sql`
            with written as (
              insert into outbox (key, partition, subject, headers, payload, traceparent, accepted_at)
              select k, p, s, h::jsonb, convert_to(b, 'UTF8'), ${traceparent}::text, a
              from unnest(${messages.map((m) => m.key)}::text[],
                          ${messages.map((m) => partitionOf(m.key, OUTBOX_PARTITIONS))}::int2[],
                          ${messages.map((m) => m.subject)}::text[],
                          ${messages.map((m) => JSON.stringify(m.headers ?? {}))}::text[],
                          ${payloads}::text[],
                          ${messages.map((m) => m.acceptedAt ?? inherited)}::timestamptz[])
                with ordinality as u(k, p, s, h, b, a, n)
              order by n
              returning 1
            )
            select pg_notify(${CHANNEL}, '') from (select 1) once where exists (select 1 from written)`,
        )
      })
      return Outbox.of({ enqueue })
    }),
  )
}

interface OutboxRow {
  readonly seq: string
  readonly id: string
  readonly key: string
  readonly subject: string
  readonly headers: Record<string, string>
  readonly payload: Buffer
  /** Set only while traces are exported. */
  readonly traceparent: string | null
  readonly accepted_at: Date
  readonly written_at: Date
}

const headersOf = (row: OutboxRow) => ({
  ...row.headers,
  [ACCEPTED_AT_HEADER]: row.accepted_at.toISOString(),
  [WRITTEN_AT_HEADER]: row.written_at.toISOString(),
})

/**
 * A row's publish: under a producer span continuing the row's trace when it has one (only rows written while
 * traces are exported do), with the trace context passed on in the message's headers.
 */
const publishRow = (nats: NatsShape, row: OutboxRow) => {
  if (row.traceparent === null) {
    return nats.publish(nats.subject(row.subject), row.payload, { msgID: row.id, headers: headersOf(row) })
  }
  return Effect.gen(function* () {
    const span = yield* Effect.currentSpan
    const headers = { ...headersOf(row), [TRACEPARENT]: traceparentOf(span) }
    return yield* nats.publish(nats.subject(row.subject), row.payload, { msgID: row.id, headers })
  }).pipe(
    continueTrace(`publish ${row.subject}`, row.traceparent, {
      kind: "producer",
      attributes: { "messaging.system": "nats", "messaging.destination.name": row.subject },
    }),
    // The relay's passes are not traced (`wakeLoop`); a row's publish belongs to the trace that wrote it.
    Effect.withTracerEnabled(true),
  )
}

/**
 * Rows in waves, for a pass holding traced rows (each publish a span of its own; untraced passes go out through one
 * `publishAll`): wave i holds the i-th pending row of every key, so a wave's publishes can all be in flight at
 * once while a key's next row is sent only after its previous one was acknowledged.
 */
export const waves = <Row extends { readonly key: string }>(rows: ReadonlyArray<Row>) => {
  const depth = new Map<string, number>()
  const out: Array<Array<Row>> = []
  for (const row of rows) {
    const d = depth.get(row.key) ?? 0
    depth.set(row.key, d + 1)
    ;(out[d] ??= []).push(row)
  }
  return out
}

/**
 * Publishes the pending rows of the partition waiting longest (so no partition starves behind busier ones)
 * while holding that partition's row lock, and marks them sent in the
 * same transaction. A failed publish rolls the whole batch back, and no later row of its key was sent, so the
 * retry cannot put a key's messages out of order; rows published before a crash are published again and
 * JetStream's duplicate window (msgID = outbox id) keeps one copy. Returns how many rows it published and
 * whether another pass may find work (rows of this partition beyond the batch, or another partition waiting), or
 * undefined when no partition had work that another relay was not already on. The rows are read in a statement
 * of their own, after the partition's lock is held, so they never include rows another relay has just sent.
 */
/** The rows not yet published and the oldest one's time, read on the `outbox_unsent` partial index. */
export const outboxBacklog = (db: DbShape) =>
  db
    .query(
      (sql) => sql<Array<{ backlog: number; oldest: Date | null }>>`
        select count(*)::int as backlog, min(created_at) as oldest from outbox where sent_at is null`,
    )
    .pipe(Effect.map(([row]) => ({ backlog: row?.backlog ?? 0, oldest: row?.oldest ?? null })))

export const relayOnce = Effect.fn("Outbox.relayOnce")(function* () {
  const db = yield* Db
  const nats = yield* Nats
  return yield* db.transaction(
    Effect.gen(function* () {
      // `waiting`: how many partitions (this one included) had unsent rows when the statement began.
      const [claimed] = yield* db.query(
        (sql) => sql<Array<{ partition: number; waiting: number }>>`
          select p.partition,
                 (select count(*)::int from outbox_partitions q
                  where exists (select 1 from outbox o where o.partition = q.partition and o.sent_at is null))
                   as waiting
          from outbox_partitions p
          cross join lateral (
            select min(o.seq) as oldest from outbox o where o.partition = p.partition and o.sent_at is null
          ) pending
          where pending.oldest is not null
          order by pending.oldest
          for update of p skip locked limit 1`,
      )
      if (claimed === undefined) return undefined
      const rows = yield* db.query(
        (sql) => sql<Array<OutboxRow>>`
          select seq, id, key, subject, headers, payload, traceparent,
                 coalesce(accepted_at, created_at) as accepted_at, written_at
          from outbox
          where partition = ${claimed.partition} and sent_at is null
          order by seq limit ${BATCH}`,
      )
      if (rows.every((row) => row.traceparent === null)) {
        yield* nats.publishAll(
          rows.map((row) => ({
            subject: nats.subject(row.subject),
            data: row.payload,
            options: { msgID: row.id, headers: headersOf(row) },
            key: row.key,
          })),
        )
      } else {
        for (const wave of waves(rows)) {
          yield* Effect.forEach(wave, (row) => publishRow(nats, row), {
            concurrency: "unbounded",
            discard: true,
          })
        }
      }
      yield* db.query(
        (sql) => sql`update outbox set sent_at = now() where seq = any(${rows.map((r) => r.seq)})`,
      )
      metrics.outboxPublished.inc(rows.length)
      return { published: rows.length, more: rows.length === BATCH || claimed.waiting > 1 }
    }),
  )
})

/**
 * A pass is one batch, so that each is bounded by `PASS_TIMEOUT` and reported as it ends; one that may have left
 * work (rows of its partition beyond the batch, or another partition waiting) asks for the next pass at once. A
 * row committed after a pass began comes with its own NOTIFY, which wakes the relay again.
 */
const NOW = new Date(0)
const relayPass = Effect.map(relayOnce(), (relayed) => (relayed?.more === true ? NOW : undefined))

/**
 * The relay: wakes on NOTIFY from `enqueue` and polls as a safety net, with `workers` partitions published
 * concurrently; also prunes sent rows past their retention. Postgres or NATS unavailable pauses it, logged once,
 * and its first pass after that is logged as its resumption.
 */
export const relayLayer = (options: { readonly workers?: number } = {}) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const db = yield* Db
      let paused: string | undefined
      yield* wakeLoop({
        channel: CHANNEL,
        poll: POLL_INTERVAL,
        workers: options.workers ?? 2,
        liveness: "outbox_relay",
        passTimeout: PASS_TIMEOUT,
        drain: relayPass.pipe(
          Effect.tap(() =>
            Effect.suspend(() => {
              if (paused === undefined) return Effect.void
              const dependency = paused
              paused = undefined
              return Effect.logInfo("outbox relay resumed").pipe(Effect.annotateLogs({ dependency }))
            }),
          ),
        ),
        onFailure: (cause) =>
          Effect.suspend(() => {
            metrics.outboxRelayErrors.inc()
            const unavailable = unavailableIn(cause)
            if (unavailable === undefined) return logFailedPass("outbox relay pass failed; retrying", cause)
            if (paused !== undefined) return Effect.void
            paused = unavailable.dependency
            return Effect.logWarning("outbox relay paused: a dependency is unavailable").pipe(
              Effect.annotateLogs({ dependency: unavailable.dependency, reason: unavailable.reason }),
            )
          }).pipe(Effect.andThen(Effect.sleep("1 second"))),
      })
      yield* Effect.forkScoped(
        db
          .query((sql) => sql`delete from outbox where sent_at < now() - ${RETENTION}::interval`)
          .pipe(
            Effect.catchCause((cause) =>
              Effect.logWarning("outbox prune failed").pipe(Effect.annotateLogs({ cause: String(cause) })),
            ),
            Effect.repeat(Schedule.spaced(PRUNE_INTERVAL)),
          ),
      )
    }),
  )

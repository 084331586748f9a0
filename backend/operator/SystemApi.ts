import { Schema } from "effect"
import { NullableTimestamp, Timestamp } from "./Api.ts"

/*
 * The system page's answers (`GET /api/system`, a dead letter's retry): streams, consumers, the outbox and dead
 * letters. Schema-only, like `Api.ts`: the console decodes the answers with these.
 */

/** Why a consumer or the outbox is flagged (past one of `SystemThresholds`); null when it is not. */
const Flag = Schema.NullOr(Schema.String)

export const SystemConsumer = Schema.Struct({
  name: Schema.String,
  pending: Schema.Number,
  ack_pending: Schema.Number,
  redelivered: Schema.Number,
  oldest_unacknowledged_at: NullableTimestamp,
  /** Age of the oldest message it has not acknowledged, in seconds; null when it is caught up. */
  oldest_unacknowledged_seconds: Schema.NullOr(Schema.Number),
  last_active_at: NullableTimestamp,
  flag: Flag,
})
export type SystemConsumer = typeof SystemConsumer.Type

export const SystemStream = Schema.Struct({
  name: Schema.String,
  subjects: Schema.Array(Schema.String),
  messages: Schema.Number,
  bytes: Schema.Number,
  first_seq: Schema.Number,
  last_seq: Schema.Number,
  /** -1: no limit. */
  limits: Schema.Struct({
    max_messages: Schema.Number,
    max_bytes: Schema.Number,
    max_age_seconds: Schema.Number,
    discard: Schema.Literals(["old", "new"]),
  }),
  consumers: Schema.Array(SystemConsumer),
})
export type SystemStream = typeof SystemStream.Type

export const OutboxState = Schema.Struct({
  /** Rows committed and not yet published. */
  backlog: Schema.Number,
  oldest_at: NullableTimestamp,
  oldest_seconds: Schema.NullOr(Schema.Number),
  flag: Flag,
})
export type OutboxState = typeof OutboxState.Type

export const DeadLetter = Schema.Struct({
  id: Schema.Number,
  actor: Schema.String,
  stream: Schema.String,
  stream_seq: Schema.Number,
  subject: Schema.String,
  reason: Schema.String,
  delivery_count: Schema.Number,
  created_at: Timestamp,
  /** How many times operators published it again, and when last. */
  retries: Schema.Number,
  retried_at: NullableTimestamp,
})
export type DeadLetter = typeof DeadLetter.Type

/** A background loop of a workers process and when it last completed a pass. */
export const LoopPass = Schema.Struct({
  /** `outbox_relay`, `retry_scheduler`, or `actor:<name>` (its slowest partition). */
  loop: Schema.String,
  /** The workers process: its host name and process id. */
  process: Schema.String,
  passed_at: Timestamp,
  seconds_ago: Schema.Number,
  flag: Flag,
})
export type LoopPass = typeof LoopPass.Type

/** What flags a consumer or the outbox (the alert rules in `infra/prometheus/alerts.yml` use the same). */
export const SystemThresholds = Schema.Struct({
  consumer_pending: Schema.Number,
  consumer_oldest_seconds: Schema.Number,
  outbox_backlog: Schema.Number,
  outbox_oldest_seconds: Schema.Number,
  loop_pass_seconds: Schema.Number,
})
export type SystemThresholds = typeof SystemThresholds.Type

/** An endpoint's deliveries not settled yet, by the status they wait in. */
export const BacklogEndpoint = Schema.Struct({
  endpoint_id: Schema.Number,
  endpoint_name: Schema.String,
  /** Whose endpoint: an owner's slug or a provider's name. */
  owner_slug: Schema.NullOr(Schema.String),
  provider_name: Schema.NullOr(Schema.String),
  waiting: Schema.Number,
  pending: Schema.Number,
  retrying: Schema.Number,
  rate_limited: Schema.Number,
  held: Schema.Number,
  /** When its oldest waiting delivery was created, and how long ago in seconds. */
  oldest_at: Timestamp,
  oldest_seconds: Schema.Number,
})
export type BacklogEndpoint = typeof BacklogEndpoint.Type

/**
 * The webhook backlog: every delivery not settled yet, which waits in Postgres (a retry is scheduled there, not
 * in JetStream), so the consumers' pending counts do not show it. A delivery being attempted right now counts
 * under the status it waits in; a held one (its endpoint is suspended) as held.
 */
export const DeliveryBacklog = Schema.Struct({
  waiting: Schema.Number,
  pending: Schema.Number,
  retrying: Schema.Number,
  rate_limited: Schema.Number,
  held: Schema.Number,
  /** The delivery that has waited longest; null when none waits. */
  oldest: Schema.NullOr(
    Schema.Struct({
      id: Schema.Number,
      endpoint_id: Schema.Number,
      created_at: Timestamp,
      seconds: Schema.Number,
    }),
  ),
  /** How many endpoints have a delivery waiting, and the (at most) five with the most, most first. */
  endpoint_count: Schema.Number,
  endpoints: Schema.Array(BacklogEndpoint),
})
export type DeliveryBacklog = typeof DeliveryBacklog.Type

/** `GET /api/system`. */
export const SystemAnswer = Schema.Struct({
  checked_at: Timestamp,
  thresholds: SystemThresholds,
  deliveries: DeliveryBacklog,
  streams: Schema.Array(SystemStream),
  outbox: OutboxState,
  /** The loops of every workers process that reported in the last minute, by loop then process. */
  loops: Schema.Array(LoopPass),
  /** The newest dead letters first (at most 100), and how many there are. */
  dead_letters: Schema.Struct({ total: Schema.Number, items: Schema.Array(DeadLetter) }),
})
export type SystemAnswer = typeof SystemAnswer.Type

/** `POST /api/dead-letters/:id/retry`. */
export const DeadLetterAnswer = Schema.Struct({ dead_letter: DeadLetter })

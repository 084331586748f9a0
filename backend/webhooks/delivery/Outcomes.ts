import { Clock, Effect, type Types } from "effect"
import { ack } from "../../platform/ActorDefinition.ts"
import { Nats } from "../../platform/Nats.ts"
import { Traced } from "../../platform/Tracing.ts"
import type { SecretsOf } from "./AttemptSecrets.ts"
import { backoffUnits, retryAfterMs } from "./Backoff.ts"
import { batched } from "./Batch.ts"
import { CONCURRENCY, distinct } from "./Claims.ts"
import { type ClaimedAttempt, DeliveryRepo, GONE_REASON, type OutcomeInput } from "./DeliveryRepo.ts"
import { Egress, type PostResult } from "./Egress.ts"
import { type endpointPlaces, SLOW_AFTER_TIMEOUTS, slowedCap } from "./EndpointPlaces.ts"
import type { StatusMessage } from "./Messages.ts"
import { publishStatus } from "./Router.ts"
import { Scheduler } from "./Scheduler.ts"
import { deliveryHeaders } from "./Signer.ts"
import { WebhookConfig } from "../Config.ts"

/**
 * A claimed attempt's status message, its optional fields set by the caller: built field by field, because
 * spreading a common part and the optional fields into each message costs every attempt more.
 */
export const statusOf = (
  claimed: ClaimedAttempt,
  status: StatusMessage["status"],
  attemptNumber: number,
  at: number,
): Types.Mutable<StatusMessage> => ({
  delivery_id: claimed.id,
  endpoint_id: claimed.endpoint_id,
  event: claimed.event,
  status,
  series: claimed.series,
  attempt_number: attemptNumber,
  at: new Date(at).toISOString(),
})

/** What to record after an attempt that was made. */
export interface Decided {
  readonly status: OutcomeInput["status"]
  readonly attemptNumber: number
  readonly nextRetryAt: number | null
  readonly failureReason: string | null
  readonly gone: boolean
}

/**
 * The retry policy applied to what came back from attempt `attempt` at `finishedAt`: 2xx delivers; 410 fails
 * and disables the endpoint; the last attempt fails; anything else retries after min(2^k, 3600) units, or
 * after `Retry-After` on 429/503 when that is later.
 */
export const decide = (
  result: PostResult,
  attempt: number,
  finishedAt: number,
  policy: { readonly maxAttempts: number; readonly backoffUnitMs: number },
): Decided => {
  if (result._tag === "Response" && result.statusCode >= 200 && result.statusCode < 300) {
    return {
      status: "delivered",
      attemptNumber: attempt,
      nextRetryAt: null,
      failureReason: null,
      gone: false,
    }
  }
  const reason = result._tag === "Response" ? `Destination answered ${result.statusCode}` : result.reason
  if (result._tag === "Response" && result.statusCode === 410) {
    return {
      status: "failed",
      attemptNumber: attempt,
      nextRetryAt: null,
      failureReason: GONE_REASON,
      gone: true,
    }
  }
  if (attempt >= policy.maxAttempts) {
    return { status: "failed", attemptNumber: attempt, nextRetryAt: null, failureReason: reason, gone: false }
  }
  const backoff = backoffUnits(attempt + 1) * policy.backoffUnitMs
  const asked =
    result._tag === "Response" && (result.statusCode === 429 || result.statusCode === 503)
      ? retryAfterMs(result.retryAfter, finishedAt)
      : undefined
  return {
    status: "retrying",
    attemptNumber: attempt + 1,
    nextRetryAt: finishedAt + Math.max(backoff, asked ?? 0),
    failureReason: reason,
    gone: false,
  }
}

/**
 * The claimed attempts made: signed with the subscriber's active secrets (`secretsOf`), POSTed, their outcomes
 * recorded (one statement per batch) and announced; `noteOutcome` counts the endpoint's timeouts in a row.
 */
export const makeOutcomes = (
  secretsOf: SecretsOf,
  { noteOutcome }: Pick<ReturnType<typeof endpointPlaces>, "noteOutcome">,
) =>
  Effect.gen(function* () {
    const config = yield* WebhookConfig
    const repo = yield* DeliveryRepo
    const egress = yield* Egress
    const nats = yield* Nats
    const scheduler = yield* Scheduler
    const traced = yield* Traced

    /**
     * The POST, in a client span `webhook.attempt` while traces are exported (the delivery's trace continues
     * from the router's attempt message), with the answer's status code.
     */
    const post = (claimed: ClaimedAttempt, headers: Record<string, string>): Effect.Effect<PostResult> => {
      const posting = egress.post(claimed.destination_url, headers, claimed.payload)
      if (!traced) return posting
      return posting.pipe(
        Effect.tap((result) =>
          result._tag === "Response"
            ? Effect.annotateCurrentSpan("http.response.status_code", result.statusCode)
            : Effect.annotateCurrentSpan("error.type", result.reason),
        ),
        Effect.withSpan(
          "webhook.attempt",
          {
            kind: "client",
            attributes: {
              "http.request.method": "POST",
              "webhook.delivery.id": String(claimed.id),
              "webhook.endpoint.id": claimed.endpoint_id,
              "webhook.event": claimed.event,
              "webhook.attempt.number": claimed.attempt_number,
            },
          },
          { captureStackTrace: false },
        ),
      )
    }

    /** Outcomes of concurrent attempts with their attempt rows, one statement per batch. */
    const recordOne = yield* batched({
      max: CONCURRENCY,
      run: (outcomes: ReadonlyArray<OutcomeInput>) =>
        Effect.gen(function* () {
          const { unique, slot } = distinct(outcomes)
          const recorded = yield* repo.recordOutcomes(unique)
          return slot.map((i) => i >= 0 && recorded[i] === true)
        }),
    })

    /** The claimed attempt made: signed, POSTed, its outcome recorded and announced. */
    const made = Effect.fnUntraced(function* (claimed: ClaimedAttempt, now: number) {
      const secrets = yield* secretsOf(claimed.subscriber_id, claimed.secrets_version, now)
      const startedAt = yield* Clock.currentTimeMillis
      const result: PostResult =
        secrets.length === 0
          ? { _tag: "NoResponse", reason: "No active signing secret", durationMs: 0 }
          : yield* post(
              claimed,
              deliveryHeaders({
                custom: claimed.custom_headers,
                event: claimed.event,
                deliveryId: claimed.id,
                timestamp: Math.floor(startedAt / 1000),
                secrets,
                body: claimed.payload,
              }),
            )
      const finishedAt = yield* Clock.currentTimeMillis
      const streak = noteOutcome(claimed.endpoint_id, result)
      if (streak === SLOW_AFTER_TIMEOUTS) {
        yield* Effect.logWarning(
          `webhook endpoint slowed: ${SLOW_AFTER_TIMEOUTS} timeouts in a row, at most ${slowedCap(config.maxInFlightPerEndpoint)} attempts in flight until it answers`,
        ).pipe(Effect.annotateLogs({ endpoint_id: claimed.endpoint_id }))
      }
      const decided = decide(result, claimed.attempt_number, finishedAt, config)
      const statusCode = result._tag === "Response" ? result.statusCode : null
      yield* recordOne({
        deliveryId: claimed.id,
        endpointId: claimed.endpoint_id,
        series: claimed.series,
        attempt: claimed.attempt_number,
        status: decided.status,
        attemptNumber: decided.attemptNumber,
        nextRetryAt: decided.nextRetryAt === null ? null : new Date(decided.nextRetryAt),
        startedAt: new Date(startedAt),
        durationMs: result.durationMs,
        statusCode,
        failureReason: decided.failureReason,
        responseBody: result._tag === "Response" ? result.body : null,
        timeoutsInRow: streak,
      })
      if (decided.nextRetryAt !== null) yield* scheduler.wakeBy(decided.nextRetryAt)
      const outcome = statusOf(claimed, decided.status, decided.attemptNumber, finishedAt)
      if (statusCode !== null) outcome.status_code = statusCode
      if (decided.failureReason !== null) outcome.failure_reason = decided.failureReason
      if (decided.nextRetryAt !== null) outcome.next_retry_at = new Date(decided.nextRetryAt).toISOString()
      yield* publishStatus(nats, outcome)
      if (decided.gone) {
        const canceled = yield* repo.disableGone(claimed.endpoint_id, claimed.id)
        yield* Effect.logWarning("webhook endpoint disabled: destination answered 410 Gone").pipe(
          Effect.annotateLogs({ endpoint_id: claimed.endpoint_id, canceled: canceled.length }),
        )
      }
      return ack
    })

    return made
  })

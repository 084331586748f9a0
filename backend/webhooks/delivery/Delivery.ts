import { randomUUID } from "node:crypto"
import { Clock, Context, Effect, Layer, type Types } from "effect"
import { ack, type ActorDefinition, type Outcome } from "../../platform/ActorDefinition.ts"
import { Crypto } from "../../platform/Crypto.ts"
import { Nats } from "../../platform/Nats.ts"
import { readCache } from "../../platform/ReadCache.ts"
import { Traced } from "../../platform/Tracing.ts"
import { backoffUnits, RATE_LIMIT_DELAY_UNITS, retryAfterMs } from "./Backoff.ts"
import { batched } from "./Batch.ts"
import {
  type AttemptKey,
  type ClaimedAttempt,
  DeliveryRepo,
  ENDPOINT_FAILURE_REASONS,
  GONE_REASON,
  type OutcomeInput,
  UNKNOWN_OUTCOME_REASON,
} from "./DeliveryRepo.ts"
import { Egress, type PostResult } from "./Egress.ts"
import { endpointPlaces, MAX_DEFER_WAVES, SLOW_AFTER_TIMEOUTS, slowedCap } from "./EndpointPlaces.ts"
import { AttemptMessage, type StatusMessage } from "./Messages.ts"
import { publishStatus } from "./Router.ts"
import { Scheduler } from "./Scheduler.ts"
import { deliveryHeaders } from "./Signer.ts"
import { WebhookConfig } from "../Config.ts"

/**
 * The delivery actor: claims the attempt a message names (only if the delivery still expects it; a stale or
 * duplicate message is dropped), checks the endpoint and the rate limit in the same statement, signs and POSTs
 * the stored bytes, and records the outcome with the attempt in one statement. Every message is acked: retries
 * are scheduled in Postgres and published by the scheduler when due. The claim is what survives a crash: a claim
 * whose lease runs out, or whose process stopped renewing its presence, with no outcome is recorded by the next
 * claim as an attempt whose outcome is unknown.
 */

/**
 * Attempts in hand (the consumer's `max_ack_pending`, shared by every process): most of their time is spent
 * waiting on receivers. One consumer pulls them all, many per request.
 */
const CONCURRENCY = 512
/** A message for a due attempt may arrive this much before its time (clocks of different processes). */
const DUE_SLACK_MS = 1000
/** How long a claim holds beyond the request's own deadline before another process may take the attempt. */
const LEASE_MARGIN_MS = 5000
/** Unsealed secrets are kept this long, unless a newer secret appears (rotation) before. */
const SECRET_CACHE_MS = 60_000

/** How often a process renews its presence as a claimer, and how long each renewal lasts. */
const CLAIMER_RENEW_EVERY = "1 second"
const CLAIMER_ALIVE_MS = 2500

/**
 * This process's presence as a claimer (`webhook_claimers`), renewed every second while it runs and removed when
 * it stops, once its attempts in hand are settled. A process killed stops renewing: within `CLAIMER_ALIVE_MS` its
 * claims may be taken over, as soon as JetStream hands their messages to another process (the actor's ack wait),
 * rather than when their leases run out. A renewal that fails (Postgres away) is tried again the next second: no
 * claim can be made meanwhile either.
 */
const claimerPresence = (repo: DeliveryRepo["Service"]) =>
  Effect.gen(function* () {
    const claimer = randomUUID()
    const renew = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      repo.keepAlive(claimer, new Date(now + CLAIMER_ALIVE_MS)),
    ).pipe(Effect.catchCause(() => Effect.void))
    yield* renew
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(CLAIMER_RENEW_EVERY), renew)))
    yield* Effect.addFinalizer(() =>
      repo.leave(claimer).pipe(
        Effect.timeout("2 seconds"),
        Effect.catchCause(() => Effect.void),
      ),
    )
    return claimer
  })

/** The endpoint an attempt message's subject (`webhooks.attempt.<endpoint_id>`) names; undefined if none. */
const endpointOfSubject = (subject: string): number | undefined => {
  const id = Number(subject.slice(subject.lastIndexOf(".") + 1))
  return Number.isSafeInteger(id) && id > 0 ? id : undefined
}

/** The first of each attempt in `items` and, per item, its index among those (-1 for a repeat). */
const distinct = <K extends AttemptKey>(items: ReadonlyArray<K>) => {
  const seen = new Map<string, number>()
  const unique: Array<K> = []
  const slot = items.map((item) => {
    const key = `${item.deliveryId}/${item.series}/${item.attempt}`
    if (seen.has(key)) return -1
    seen.set(key, unique.length)
    unique.push(item)
    return unique.length - 1
  })
  return { unique, slot }
}

interface CachedSecrets {
  readonly secrets: ReadonlyArray<{ readonly secret: string; readonly expiresAt: number | null }>
  /** All of them, when none expires (no rotation overlap): the list every attempt signs with, made once. */
  readonly withoutExpiry: ReadonlyArray<string> | undefined
}

const activeSecrets = (entry: CachedSecrets, now: number): ReadonlyArray<string> =>
  entry.withoutExpiry ??
  entry.secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).map((s) => s.secret)

/**
 * A claimed attempt's status message, its optional fields set by the caller: built field by field, because
 * spreading a common part and the optional fields into each message costs every attempt more.
 */
const statusOf = (
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

export class DeliveryAttempts extends Context.Service<
  DeliveryAttempts,
  {
    /**
     * Makes the attempt `message` names for `endpointId` (its subject's); `waitingBehind`: attempt messages
     * JetStream has yet to deliver.
     */
    readonly attempt: (
      message: AttemptMessage,
      endpointId: number | undefined,
      waitingBehind: number,
    ) => Effect.Effect<Outcome>
  }
>()("partner-service/webhooks/DeliveryAttempts") {
  static readonly layer = Layer.effect(
    DeliveryAttempts,
    Effect.gen(function* () {
      const config = yield* WebhookConfig
      const repo = yield* DeliveryRepo
      const egress = yield* Egress
      const crypto = yield* Crypto
      const nats = yield* Nats
      const scheduler = yield* Scheduler
      const leaseMs = config.timeoutMs + LEASE_MARGIN_MS
      const traced = yield* Traced
      const claimer = yield* claimerPresence(repo)

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

      const { isSlowed, capOf, takePlace, release, noteOutcome, slowedDeferral } = endpointPlaces(config)

      /**
       * Claims of concurrent attempts, one statement per batch (of any of the attempts in hand); a duplicate key
       * in a batch claims nothing. An attempt over its endpoint's cap is deferred in the same statement, the
       * endpoint's later ones in waves of its cap, one backoff unit apart (a slowed endpoint's are booked, above).
       */
      const claimOne = yield* batched({
        max: CONCURRENCY,
        run: (
          keys: ReadonlyArray<
            AttemptKey & { readonly endpointId: number | undefined; readonly admitted: boolean }
          >,
        ) =>
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const rateLimitedUntil = now + RATE_LIMIT_DELAY_UNITS * config.backoffUnitMs
            const { unique, slot } = distinct(keys)
            const waves = new Map<number, number>()
            const claimKeys = unique.map(({ admitted, ...key }) => {
              if (admitted || key.endpointId === undefined) return { ...key, deferUntil: null }
              if (isSlowed(key.endpointId)) {
                return { ...key, deferUntil: new Date(slowedDeferral(key.endpointId, now)) }
              }
              const behind = waves.get(key.endpointId) ?? 0
              waves.set(key.endpointId, behind + 1)
              const units = Math.min(MAX_DEFER_WAVES, 1 + Math.floor(behind / capOf(key.endpointId)))
              return { ...key, deferUntil: new Date(now + units * config.backoffUnitMs) }
            })
            const claimed = yield* repo.claim(claimKeys, {
              now: new Date(now),
              dueBy: new Date(now + DUE_SLACK_MS),
              slot: Math.floor(now / config.backoffUnitMs),
              rateLimit: config.rateLimitPerMinute,
              leaseUntil: new Date(now + leaseMs),
              leaseMs,
              claimer,
              rateLimitedUntil: new Date(rateLimitedUntil),
              maxAttempts: config.maxAttempts,
            })
            const deferredUntil = claimKeys.reduce(
              (at, key) => Math.max(at, key.deferUntil?.getTime() ?? 0),
              0,
            )
            return slot.map((i) => ({
              now,
              rateLimitedUntil,
              deferredUntil,
              claimed: i < 0 ? undefined : claimed[i],
            }))
          }),
      })

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

      /**
       * Subscribers' unsealed secrets, by subscriber and version (its newest secret id and count of active ones,
       * read in the claim): a rotation or an expiry makes a new version, read on the next attempt.
       */
      const secrets = readCache<string, CachedSecrets, never>({
        freshMillis: SECRET_CACHE_MS,
        maxSize: 10_000,
      })
      const readSecrets = (subscriberId: number, now: number) =>
        Effect.gen(function* () {
          const rows = yield* repo.secrets(subscriberId, new Date(now))
          const opened = yield* Effect.forEach(rows, (row) =>
            Effect.map(crypto.open(row.secret_sealed), (plain) => ({
              secret: plain.toString("utf8"),
              expiresAt: row.expires_at?.getTime() ?? null,
            })),
          )
          return {
            secrets: opened,
            withoutExpiry: opened.every((s) => s.expiresAt === null)
              ? opened.map((s) => s.secret)
              : undefined,
          }
        })

      /** The subscriber's active secrets, newest first, unsealed once per version. */
      const secretsOf = (subscriberId: number, version: string | null, now: number) =>
        secrets
          .get(`${subscriberId} ${version}`, () => readSecrets(subscriberId, now))
          .pipe(Effect.map((entry) => activeSecrets(entry, now)))

      // Untraced: a span per attempt (with its stack trace) is a measurable share of an attempt's CPU time.
      const attempt = Effect.fnUntraced(function* (
        message: AttemptMessage,
        endpointId: number | undefined,
        admitted: boolean,
        waitingBehind: number,
      ) {
        scheduler.attemptsWaiting(waitingBehind)
        const { now, rateLimitedUntil, deferredUntil, claimed } = yield* claimOne({
          deliveryId: message.delivery_id,
          series: message.series,
          attempt: message.attempt,
          endpointId,
          admitted,
        })
        // Stale (an attempt already made or claimed, a newer series) or a duplicate: nothing to do.
        if (claimed === undefined) return ack
        switch (claimed.decision) {
          // Over its endpoint's cap: due again shortly, its status and attempt unchanged.
          case "deferred": {
            yield* scheduler.wakeBy(deferredUntil)
            return ack
          }
          case "rate_limited": {
            yield* scheduler.wakeBy(rateLimitedUntil)
            const rateLimited = statusOf(claimed, "rate_limited", claimed.attempt_number, now)
            rateLimited.next_retry_at = new Date(rateLimitedUntil).toISOString()
            yield* publishStatus(nats, rateLimited)
            return ack
          }
          // Held until the endpoint is active again (the scheduler releases it): its status does not change.
          case "held":
            return ack
          case "deleted":
          case "disabled":
          case "exhausted": {
            const failed = statusOf(claimed, "failed", claimed.attempt_number, now)
            failed.failure_reason =
              claimed.decision === "exhausted"
                ? UNKNOWN_OUTCOME_REASON
                : ENDPOINT_FAILURE_REASONS[claimed.decision]
            yield* publishStatus(nats, failed)
            return ack
          }
          case "delivering":
            break
        }
        return yield* made(claimed, now)
      })

      /** The attempt, holding a place of its endpoint from before its claim to its outcome, or deferred. */
      const attemptInPlace = (
        message: AttemptMessage,
        endpointId: number | undefined,
        waitingBehind: number,
      ) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(restore(takePlace(endpointId)), (admitted) =>
            restore(attempt(message, endpointId, admitted, waitingBehind)).pipe(
              Effect.ensuring(Effect.sync(() => admitted && endpointId !== undefined && release(endpointId))),
            ),
          ),
        )

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

      return DeliveryAttempts.of({ attempt: attemptInPlace })
    }),
  ).pipe(Layer.provide(WebhookConfig.layer))
}

export const deliveryActor: ActorDefinition<AttemptMessage, DeliveryAttempts> = {
  name: "webhook_delivery",
  stream: "WEBHOOKS",
  subject: "webhooks.attempt.*",
  partitions: 0,
  concurrency: CONCURRENCY,
  schema: AttemptMessage,
  handle: (message, delivery) =>
    DeliveryAttempts.use((attempts) =>
      attempts.attempt(message, endpointOfSubject(delivery.subject), delivery.pending),
    ),
}

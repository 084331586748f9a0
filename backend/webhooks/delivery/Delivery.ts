import { Context, Effect, Layer } from "effect"
import { ack, type ActorDefinition, type Outcome } from "../../platform/ActorDefinition.ts"
import { Nats } from "../../platform/Nats.ts"
import { makeAttemptSecrets } from "./AttemptSecrets.ts"
import { CONCURRENCY, makeClaims } from "./Claims.ts"
import { ENDPOINT_FAILURE_REASONS, UNKNOWN_OUTCOME_REASON } from "./DeliveryRepo.ts"
import { endpointPlaces } from "./EndpointPlaces.ts"
import { AttemptMessage } from "./Messages.ts"
import { makeOutcomes, statusOf } from "./Outcomes.ts"
import { publishStatus } from "./Router.ts"
import { Scheduler } from "./Scheduler.ts"
import { WebhookConfig } from "../Config.ts"

export { type Decided, decide } from "./Outcomes.ts"

/**
 * The delivery actor, in parts by use: the claims (`Claims.ts`), the secrets it signs with (`AttemptSecrets.ts`) and
 * the attempts made and their outcomes (`Outcomes.ts`). It claims the attempt a message names (only if the delivery
 * still expects it; a stale or duplicate message is dropped), checks the endpoint and the rate limit in the same
 * statement, signs and POSTs the stored bytes, and records the outcome with the attempt in one statement. Every
 * message is acked: retries are scheduled in Postgres and published by the scheduler when due. The claim is what
 * survives a crash: a claim whose lease runs out, or whose process stopped renewing its presence, with no outcome is
 * recorded by the next claim as an attempt whose outcome is unknown.
 */

/** The endpoint an attempt message's subject (`webhooks.attempt.<endpoint_id>`) names; undefined if none. */
const endpointOfSubject = (subject: string): number | undefined => {
  const id = Number(subject.slice(subject.lastIndexOf(".") + 1))
  return Number.isSafeInteger(id) && id > 0 ? id : undefined
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
      const nats = yield* Nats
      const scheduler = yield* Scheduler
      const places = endpointPlaces(config)
      const { takePlace, release } = places
      const claimOne = yield* makeClaims(places)
      const made = yield* makeOutcomes(yield* makeAttemptSecrets, places)

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

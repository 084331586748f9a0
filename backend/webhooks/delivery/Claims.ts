import { randomUUID } from "node:crypto"
import { Clock, Effect } from "effect"
import { RATE_LIMIT_DELAY_UNITS } from "./Backoff.ts"
import { batched } from "./Batch.ts"
import { type AttemptKey, DeliveryRepo } from "./DeliveryRepo.ts"
import { type endpointPlaces, MAX_DEFER_WAVES } from "./EndpointPlaces.ts"
import { WebhookConfig } from "../Config.ts"

/**
 * Attempts in hand (the consumer's `max_ack_pending`, shared by every process): most of their time is spent
 * waiting on receivers. One consumer pulls them all, many per request.
 */
export const CONCURRENCY = 512
/** A message for a due attempt may arrive this much before its time (clocks of different processes). */
const DUE_SLACK_MS = 1000
/** How long a claim holds beyond the request's own deadline before another process may take the attempt. */
const LEASE_MARGIN_MS = 5000

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

/** The first of each attempt in `items` and, per item, its index among those (-1 for a repeat). */
export const distinct = <K extends AttemptKey>(items: ReadonlyArray<K>) => {
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

/** An attempt to claim: the key its message names, its endpoint, and whether it holds a place of that endpoint. */
export type ClaimInput = AttemptKey & { readonly endpointId: number | undefined; readonly admitted: boolean }

/** The delivery actor's claims, as this process (present as a claimer while it runs) makes them. */
export const makeClaims = ({
  isSlowed,
  capOf,
  slowedDeferral,
}: Pick<ReturnType<typeof endpointPlaces>, "isSlowed" | "capOf" | "slowedDeferral">) =>
  Effect.gen(function* () {
    const config = yield* WebhookConfig
    const repo = yield* DeliveryRepo
    const leaseMs = config.timeoutMs + LEASE_MARGIN_MS
    const claimer = yield* claimerPresence(repo)

    /**
     * Claims of concurrent attempts, one statement per batch (of any of the attempts in hand); a duplicate key
     * in a batch claims nothing. An attempt over its endpoint's cap is deferred in the same statement, the
     * endpoint's later ones in waves of its cap, one backoff unit apart (a slowed endpoint's are booked, `EndpointPlaces.ts`).
     */
    const claimOne = yield* batched({
      max: CONCURRENCY,
      run: (keys: ReadonlyArray<ClaimInput>) =>
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
          const deferredUntil = claimKeys.reduce((at, key) => Math.max(at, key.deferUntil?.getTime() ?? 0), 0)
          return slot.map((i) => ({
            now,
            rateLimitedUntil,
            deferredUntil,
            claimed: i < 0 ? undefined : claimed[i],
          }))
        }),
    })

    return claimOne
  })

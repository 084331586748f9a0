import { Effect, PartitionedSemaphore } from "effect"
import { verifySecret } from "../platform/Crypto.ts"
import { metrics } from "../platform/Observability.ts"
import { type Gateway, TokenRequestsBlocked } from "./Domain.ts"

/** Token requests of one source in progress at once (waiting for a secret check or in one); more are a 429. */
const REQUESTS_PER_SOURCE = 4

/**
 * Where a secret check waits for a hash slot. A client of the gateway asking from a source with no recent failure
 * for its id waits in a lane of its own; everyone else (unknown ids, revoked clients, sources that recently failed
 * for that id) shares the strangers' lane.
 */
export type Lane = { readonly kind: "client"; readonly clientId: string } | { readonly kind: "stranger" }

const laneKey = (lane: Lane) => (lane.kind === "client" ? `client ${lane.clientId}` : "stranger")

/**
 * Secret checks, at most `slots` at once per gateway. The hash itself runs on libuv's thread pool
 * (`crypto.scrypt`), never on the event loop; the cap keeps a flood of token requests from taking every core from
 * the requests already authenticated. A freed slot goes to the lanes with someone waiting in turn, so a flood of
 * strangers queues behind itself: a client in its own lane waits for the checks under way and at most one more
 * stranger's per slot, and a stranger who knows a client's id slows down only that client's lane, and only from
 * sources that never failed for it.
 */
export const makeSecretChecks = (slots: number) => {
  const lanes = {
    partner: PartitionedSemaphore.makeUnsafe<string>({ permits: slots }),
    ingest: PartitionedSemaphore.makeUnsafe<string>({ permits: slots }),
  }

  /** Whether `secret` matches `hash`, once a slot of `gateway` is free for `lane`. */
  const check = (gateway: Gateway, lane: Lane, secret: string, hash: string) =>
    Effect.suspend(() => {
      const labels = { gateway, lane: lane.kind }
      const waiting = metrics.tokenChecksWaiting.labels(labels)
      const hashing = metrics.tokenHashes.labels({ gateway })
      let queued = true
      const leave = () => {
        if (queued) {
          queued = false
          waiting.dec()
        }
      }
      waiting.inc()
      return Effect.acquireUseRelease(
        Effect.sync(() => {
          leave()
          metrics.tokenSecretChecks.inc(labels)
          hashing.inc()
        }),
        () => verifySecret(secret, hash),
        () => Effect.sync(() => hashing.dec()),
      ).pipe(lanes[gateway].withPermit(laneKey(lane)), Effect.ensuring(Effect.sync(leave)))
    })

  /** Token requests in progress by source, in this process. */
  const inProgress = new Map<string, number>()
  /** Runs `effect` for `source` unless that source already has `REQUESTS_PER_SOURCE` token requests in progress. */
  const admitted = <A, E, R>(gateway: Gateway, source: string, effect: Effect.Effect<A, E, R>) =>
    Effect.suspend((): Effect.Effect<A, E | TokenRequestsBlocked, R> => {
      const count = inProgress.get(source) ?? 0
      if (count >= REQUESTS_PER_SOURCE) {
        metrics.tokenRequestsThrottled.inc({ gateway, reason: "concurrent" })
        return Effect.fail(new TokenRequestsBlocked({ retryAfterSeconds: 1 }))
      }
      inProgress.set(source, count + 1)
      return effect.pipe(
        Effect.ensuring(
          Effect.sync(() => {
            const left = (inProgress.get(source) ?? 1) - 1
            if (left === 0) inProgress.delete(source)
            else inProgress.set(source, left)
          }),
        ),
      )
    })

  return { check, admitted }
}

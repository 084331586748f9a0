import { Effect } from "effect"
import { HashSlots, makeSourceCap } from "../platform/HashSlots.ts"
import { metrics } from "../platform/Observability.ts"
import { type Gateway, TokenRequestsBlocked } from "./Domain.ts"

/**
 * Where a secret check waits for a hash slot. A client of the gateway asking from a source with no recent failure
 * for its id waits in a lane of its own; everyone else (unknown ids, revoked clients, sources that recently failed
 * for that id) shares the gateway's strangers' lane.
 */
export type Lane = { readonly kind: "client"; readonly clientId: string } | { readonly kind: "stranger" }

const laneKey = (gateway: Gateway, lane: Lane) =>
  lane.kind === "client" ? `${gateway} client ${lane.clientId}` : `${gateway} stranger`

/**
 * Secret checks in the process's hash slots (`HashSlots`, shared with the console's sign-in), in lanes: a flood
 * of strangers queues behind itself, a client in its own lane waits for the checks under way and at most one more
 * from each other busy lane, and a stranger who knows a client's id slows down only that client's lane, and only
 * from sources that never failed for it. At most `perSource` token requests of one source are in progress at once.
 */
export const makeSecretChecks = (hashSlots: HashSlots["Service"], perSource: number) => {
  /** Whether `secret` matches `hash`, once a slot is free for `lane` of `gateway`. */
  const check = (gateway: Gateway, lane: Lane, secret: string, hash: string) =>
    Effect.suspend(() => {
      const labels = { gateway, lane: lane.kind }
      return hashSlots.check(laneKey(gateway, lane), secret, hash, {
        waiting: metrics.tokenChecksWaiting.labels(labels),
        begun: { inc: () => metrics.tokenSecretChecks.inc(labels) },
        hashing: metrics.tokenHashes.labels({ gateway }),
      })
    })

  const cap = makeSourceCap(perSource)
  /** Runs `effect` for `source` unless that source already has `perSource` token requests in progress. */
  const admitted = <A, E, R>(gateway: Gateway, source: string, effect: Effect.Effect<A, E, R>) =>
    cap(
      source,
      effect,
      Effect.suspend(() => {
        metrics.tokenRequestsThrottled.inc({ gateway, reason: "concurrent" })
        return Effect.fail(new TokenRequestsBlocked({ retryAfterSeconds: 1, reason: "in progress" }))
      }),
    )

  return { check, admitted }
}

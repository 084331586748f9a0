import { Cause, Duration, Effect } from "effect"
import { type ActorDefinition, type Outcome, term } from "../ActorDefinition.ts"
import { Db } from "../Db.ts"
import { Nats, type PulledMessage } from "../Nats.ts"
import { makeSettlements } from "../Settlements.ts"
import type { ActorReports } from "./Reports.ts"

export const readHeaders = (msg: PulledMessage) => {
  const out: Record<string, string> = {}
  for (const key of msg.headers?.keys() ?? []) out[key] = msg.headers?.get(key) ?? ""
  return out
}

/**
 * How an actor settles its messages: acks and naks gathered per event-loop turn (`makeSettlements`); a term
 * recorded in `dead_letters` first (once: a term that was lost and repeated is recorded once), handed to the
 * actor's `onTerminated`, and logged.
 */
export const actorSettling = <A, R>(actor: ActorDefinition<A, R>, stream: string, reports: ActorReports) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const db = yield* Db
    const settlements = makeSettlements()

    /** Whether this is the message's first record. */
    const recordDeadLetter = (msg: PulledMessage, reason: string) =>
      db
        .query(
          (sql) => sql`
          insert into dead_letters (actor, stream, stream_seq, subject, headers, payload, reason, delivery_count)
          values (${actor.name}, ${stream}, ${msg.seq}, ${nats.unprefixed(msg.subject)},
                  ${sql.json(readHeaders(msg))}, ${Buffer.from(msg.data)}, ${reason}, ${msg.info.deliveryCount})
          on conflict (actor, stream, stream_seq) do nothing
          returning stream_seq`,
        )
        .pipe(Effect.map((rows) => rows.length > 0))

    const terminated = (msg: PulledMessage, reason: string): Effect.Effect<void, never, R> =>
      actor.onTerminated === undefined
        ? Effect.void
        : Effect.suspend(() =>
            actor.onTerminated!({
              subject: nats.unprefixed(msg.subject),
              streamSequence: msg.seq,
              headers: readHeaders(msg),
              raw: msg.data,
              reason,
            }),
          ).pipe(
            Effect.catchCause((cause) =>
              Effect.logWarning("actor could not record a terminated message").pipe(
                Effect.annotateLogs({ actor: actor.name, seq: msg.seq, cause: Cause.pretty(cause) }),
              ),
            ),
          )

    const settle = (msg: PulledMessage, outcome: Outcome): Effect.Effect<void, never, R> => {
      switch (outcome._tag) {
        case "Ack":
          return Effect.sync(() => {
            reports.handled("Ack")
            settlements.ack(msg)
          })
        case "Nak":
          return Effect.sync(() => {
            reports.handled("Nak")
            settlements.nak(msg, Duration.toMillis(outcome.delay))
          })
        case "Term":
          return Effect.gen(function* () {
            reports.handled("Term")
            if (yield* recordDeadLetter(msg, outcome.reason)) yield* terminated(msg, outcome.reason)
            yield* Effect.logWarning("message terminated").pipe(
              Effect.annotateLogs({
                actor: actor.name,
                subject: msg.subject,
                seq: msg.seq,
                reason: outcome.reason,
              }),
            )
            // No reason on the wire: nats-server 2.9 ignores `+TERM <reason>`; the reason is in dead_letters.
            msg.term()
          })
      }
    }

    return {
      settle,
      /** A message that does not decode: terminated and recorded. */
      poison: (msg: PulledMessage, reason: string) => {
        reports.failed("undecodable")
        return settle(msg, term(`undecodable: ${reason}`))
      },
      /** Hands a message back at once, uncounted (stopping, or no longer leading its partition). */
      handBack: (msg: PulledMessage) => settlements.nak(msg),
      /** Sends what is queued at once (before the connection may close). */
      flush: settlements.flush,
    }
  })

export type ActorSettling<R> = Effect.Success<ReturnType<typeof actorSettling<unknown, R>>>

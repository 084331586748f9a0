/**
 * JetStream publishes made by hand on the core connection, instead of nats.js's `js.publish`. No server bug is
 * worked around here (any nats-server with JetStream answers these publishes); the client is: `js.publish` makes
 * a request object and a timer per publish and, on every acknowledgement, an error object with a stack trace (its
 * request's `cancel`): a measurable share of a publish's CPU. This file can go, and `Nats.publish` call
 * `js.publish`, once a nats.js release no longer does that and `npm run bench` shows no loss.
 */
import {
  createInbox,
  headers as natsHeaders,
  type MsgHdrs,
  type NatsConnection,
} from "@nats-io/transport-node"
import { Effect, Schedule } from "effect"
import { perTurnBatch } from "../PerTurnBatch.ts"
import type { PublishAck, PublishOptions } from "./Types.ts"
import { type PubAckResponse, Status } from "./Wire.ts"

const decoder = new TextDecoder()

/** Called once per publish: with an error, or with JetStream's acknowledgement. */
export type PublishDone = (error: Error | undefined, ack: PublishAck | undefined) => void

/**
 * JetStream publishes as the server sees them: a core publish with a reply subject, the acknowledgement matched
 * by token on one inbox subscription per connection, deadlines (on the monotonic clock) checked by one fiber.
 */
export const acknowledgedPublisher = (connection: NatsConnection) =>
  Effect.gen(function* () {
    interface Waiting {
      readonly subject: string
      readonly deadline: number
      readonly done: PublishDone
    }
    const inbox = createInbox()
    const waiting = new Map<string, Waiting>()
    let next = 0
    const settle = (token: string, error: Error | undefined, ack?: PublishAck) => {
      const entry = waiting.get(token)
      if (entry === undefined) return
      waiting.delete(token)
      entry.done(error, ack)
    }
    connection.subscribe(`${inbox}.*`, {
      callback: (error, msg) => {
        // The subscription ends with the connection; publishes still waiting time out.
        if (error !== null) return
        const token = msg.subject.slice(inbox.length + 1)
        const entry = waiting.get(token)
        if (entry === undefined) return
        if (msg.headers?.code === Status.NoResponders) {
          return settle(token, new Error(`no JetStream stream holds ${entry.subject}`))
        }
        try {
          const answer = JSON.parse(decoder.decode(msg.data)) as PubAckResponse
          if (answer.error !== undefined || typeof answer.stream !== "string" || answer.stream === "") {
            return settle(
              token,
              new Error(`JetStream refused the publish: ${answer.error?.description ?? "invalid ack"}`),
            )
          }
          settle(token, undefined, {
            stream: answer.stream,
            seq: answer.seq ?? 0,
            duplicate: answer.duplicate === true,
            ...(answer.domain === undefined ? {} : { domain: answer.domain }),
          })
        } catch (parseError) {
          settle(
            token,
            new Error(`JetStream answered the publish with something else: ${String(parseError)}`),
          )
        }
      },
    })
    /** Publishes of one turn of the event loop, handed to the client together: one socket write. */
    const outgoing = perTurnBatch<{
      token: string
      subject: string
      data: Uint8Array
      headers: MsgHdrs | undefined
    }>((items) => {
      for (const { token, subject, data, headers } of items) {
        try {
          connection.publish(subject, data, {
            reply: `${inbox}.${token}`,
            ...(headers === undefined ? {} : { headers }),
          })
        } catch (error) {
          settle(token, error instanceof Error ? error : new Error(String(error)))
        }
      }
    })
    yield* Effect.sync(() => {
      const now = performance.now()
      for (const [token, entry] of waiting) {
        if (entry.deadline <= now)
          settle(token, new Error(`no JetStream acknowledgement for ${entry.subject}`))
      }
    }).pipe(Effect.repeat(Schedule.spaced("50 millis")), Effect.forkScoped)
    return (
      subject: string,
      data: Uint8Array,
      options: PublishOptions,
      timeoutMs: number,
      done: PublishDone,
    ) => {
      let h: MsgHdrs | undefined
      if (options.msgID !== undefined || options.headers !== undefined) {
        h = natsHeaders()
        for (const [k, v] of Object.entries(options.headers ?? {})) h.set(k, v)
        if (options.msgID !== undefined) h.set("Nats-Msg-Id", options.msgID)
      }
      const token = (next++).toString(36)
      waiting.set(token, { subject, deadline: performance.now() + timeoutMs, done })
      outgoing.add({ token, subject, data, headers: h })
    }
  })

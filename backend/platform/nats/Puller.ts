/**
 * Pulls from durable consumers made by hand on the core connection, instead of nats.js's `consume`/`fetch`, for
 * three faults:
 * - nats-server before 2.9.15 drops a pull that expires while it is handing it a message, without sending its 408
 *   (nats-server#3942): a pull not answered shortly after its expiry is given up (`PULL_GRACE_MS`).
 * - nats-server 2.9.10 (Debian 12's package) leaves some messages nak'd with a delay undelivered for minutes, past
 *   their ack wait: the delay is waited out here (`Pulled.nak`).
 * - nats.js gives a pull up when it reads two idle heartbeats late (a busy event loop) and unsubscribes its inbox
 *   while the server may still deliver to it; such a message waits out its ack wait. Here the subscription
 *   outlives every pull and no heartbeats are asked for.
 * This file can go, and the actors use nats.js's `fetch`, once the deployed server is 2.9.15 or later, hands out
 * nak'd messages on time (the nak tests of test/platform/Nats.test.ts, with the server's own delay), and nats.js
 * keeps a pull's inbox while the server may deliver to it.
 */
import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node"
import { Effect } from "effect"
import { PullFailed, type PulledMessage, type Puller } from "./Types.ts"
import {
  ACK,
  ACK_REPLY_PREFIX,
  deliveredToken,
  IN_PROGRESS,
  NAK,
  pullRequest,
  pullSubject,
  Status,
  TERM,
} from "./Wire.ts"

/**
 * How often a message in hand (pulled, not yet settled) is marked in progress, so that JetStream hands it to
 * another process only once this one stopped marking it: well inside every consumer's ack wait, whose length
 * is then how soon a process that died has its messages taken over, however long a handler works.
 */
const IN_PROGRESS_EVERY_MS = 1000
const encoder = new TextEncoder()
/**
 * How long after its expiry a pull JetStream did not answer is given up. The messages published meanwhile wait for
 * the next pull, so the wait is kept short. Two such pulls in a row mean something else (a lost connection, a
 * consumer deleted between pulls), and fail.
 */
const PULL_GRACE_MS = 100
/** How long a pull that does not wait (`expiresMs` 0) may go unanswered: the server answers it at once when it can. */
const NO_WAIT_ANSWER_MS = 1000

/**
 * The messages of one puller in hand, each marked in progress every `IN_PROGRESS_EVERY_MS` until it is settled
 * (a nak with a delay, until its delay ran out). One timer for all of them, running only while some are in hand.
 */
class InHand {
  private readonly messages = new Set<Pulled>()
  private timer: ReturnType<typeof setInterval> | undefined
  add(msg: Pulled) {
    this.messages.add(msg)
    this.timer ??= setInterval(() => this.mark(), IN_PROGRESS_EVERY_MS).unref()
  }
  /** Whether it was in hand (a message is settled once). */
  delete(msg: Pulled) {
    const had = this.messages.delete(msg)
    if (this.messages.size === 0) this.stop()
    return had
  }
  /** Stops marking: what is still in hand goes to another process after its ack wait. */
  stop() {
    clearInterval(this.timer)
    this.timer = undefined
  }
  private mark() {
    for (const msg of this.messages) msg.respond(IN_PROGRESS)
  }
}

/** A pulled message, read from its reply subject (`Wire.ts`). */
class Pulled implements PulledMessage {
  readonly seq: number
  readonly info: PulledMessage["info"]
  private readonly msg: Msg
  private readonly inHand: InHand
  constructor(msg: Msg, inHand: InHand) {
    this.msg = msg
    this.inHand = inHand
    const tokens = msg.reply!.split(".")
    const at = deliveredToken(tokens.length)
    this.info = {
      deliveryCount: Number(tokens[at]),
      pending: Number(tokens[at + 4]),
      timestampNanos: Number(tokens[at + 3]),
    }
    this.seq = Number(tokens[at + 1])
    inHand.add(this)
  }
  get subject() {
    return this.msg.subject
  }
  get data() {
    return this.msg.data
  }
  get headers() {
    return this.msg.headers
  }
  /** Answers JetStream; a closed connection is not an error: the server hands the message out again after its ack wait. */
  respond(answer: Uint8Array) {
    try {
      this.msg.respond(answer)
    } catch {
      this.inHand.delete(this)
    }
  }
  private settle(answer: Uint8Array) {
    if (this.inHand.delete(this)) this.respond(answer)
  }
  ack() {
    this.settle(ACK)
  }
  /**
   * The delay is waited out here, not by the server (see the top of this file), the message still in hand (marked
   * in progress) meanwhile.
   */
  nak(millis?: number) {
    if (millis === undefined || millis <= 0) return this.settle(NAK)
    setTimeout(() => this.settle(NAK), millis).unref()
  }
  term() {
    this.settle(TERM)
  }
}

/**
 * Pull requests as the server sees them: a request to the consumer's pull subject whose reply subject is a token
 * of this puller's inbox. Messages arrive on their own subjects with a `$JS.ACK` reply; the server's status
 * answers (408 expired; 409 consumer deleted ...) arrive on the token.
 */
export const puller = (connection: NatsConnection, stream: string, consumer: string) =>
  Effect.gen(function* () {
    interface Current {
      readonly token: string
      readonly batch: number
      received: number
      readonly onMessage: (msg: PulledMessage) => void
      readonly timer: ReturnType<typeof setTimeout>
      readonly end: (problem: string | undefined) => void
    }
    const inbox = createInbox()
    const api = pullSubject(stream, consumer)
    let current: Current | undefined
    let next = 0
    /** The last pull was not answered: a second in a row is a failure. */
    let unanswered = false
    const inHand = new InHand()
    yield* Effect.addFinalizer(() => Effect.sync(() => inHand.stop()))
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        connection.subscribe(`${inbox}.*`, {
          callback: (error, msg) => {
            if (error !== null) return
            const pull = current
            if (msg.reply?.startsWith(ACK_REPLY_PREFIX) === true) {
              if (pull === undefined || pull.received >= pull.batch) return void msg.respond(NAK)
              pull.received++
              pull.onMessage(new Pulled(msg, inHand))
              if (pull.received === pull.batch) pull.end(undefined)
              return
            }
            if (pull === undefined || msg.subject !== pull.token) return
            const code = msg.headers?.code ?? 0
            if (code === Status.Control) return
            pull.end(
              code === Status.NoMessages || code === Status.RequestTimeout
                ? undefined
                : `JetStream ended a pull on ${stream} > ${consumer}: ${code} ${msg.headers?.description ?? ""}`,
            )
          },
        }),
      ),
      (sub) => Effect.sync(() => sub.unsubscribe()),
    )
    const pull: Puller["pull"] = (batch, expiresMs, onMessage) =>
      Effect.callback<number, PullFailed>((resume) => {
        const token = `${inbox}.${(next++).toString(36)}`
        const end = (problem: string | undefined, answered = true) => {
          if (current?.token !== token) return
          const received = current.received
          clearTimeout(current.timer)
          current = undefined
          if (!answered && !unanswered) {
            unanswered = true
            return resume(Effect.succeed(received))
          }
          unanswered = false
          resume(
            problem === undefined
              ? Effect.succeed(received)
              : Effect.fail(new PullFailed({ message: problem, received })),
          )
        }
        current = {
          token,
          batch,
          received: 0,
          onMessage,
          end,
          timer: setTimeout(
            () => end(`JetStream answered none of two pulls in a row on ${stream} > ${consumer}`, false),
            expiresMs === 0 ? NO_WAIT_ANSWER_MS : expiresMs + PULL_GRACE_MS,
          ),
        }
        try {
          connection.publish(api, encoder.encode(pullRequest(batch, expiresMs)), { reply: token })
        } catch (error) {
          end(`a pull on ${stream} > ${consumer} could not be sent: ${String(error)}`)
        }
        // Interrupted (a drain that timed out): the pull is left to expire; what it still brings is handed back.
        return Effect.sync(() => end(undefined))
      })
    return { pull } satisfies Puller
  })

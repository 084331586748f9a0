import type { PulledMessage } from "./Nats.ts"
import { perTurnBatch } from "./PerTurnBatch.ts"

/**
 * Acks and naks made in one turn of the event loop, sent together at its end (`perTurnBatch`): one socket write for
 * many settlements instead of one each. A nak's delay is in milliseconds; an ack has none (-1). `flush` sends what
 * is queued at once (an actor stopping does, before its connection may close).
 */
export const makeSettlements = () => {
  const queue = perTurnBatch<readonly [PulledMessage, number | undefined]>((items) => {
    for (const [msg, delay] of items) {
      if (delay === -1) msg.ack()
      else msg.nak(delay)
    }
  })
  return {
    ack: (msg: PulledMessage) => queue.add([msg, -1]),
    nak: (msg: PulledMessage, delay?: number) => queue.add([msg, delay]),
    flush: queue.flush,
  }
}

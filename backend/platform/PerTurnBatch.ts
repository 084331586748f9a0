/**
 * Items queued during one turn of the event loop, handed to `send` together at its end (`setImmediate`). The NATS
 * client writes to its socket once per turn of its own, so messages sent together share one socket write instead
 * of one each. `flush` hands over what is queued at once (before a connection may close).
 */
export const perTurnBatch = <T>(send: (items: ReadonlyArray<T>) => void) => {
  let queued: Array<T> = []
  const flush = () => {
    const items = queued
    queued = []
    if (items.length > 0) send(items)
  }
  return {
    add: (item: T) => {
      if (queued.length === 0) setImmediate(flush)
      queued.push(item)
    },
    flush,
  }
}

import { randomUUID } from "node:crypto"
import { Worker } from "node:worker_threads"
import { Effect } from "effect"
import { makeEnvelope } from "../../backend/events/Envelope.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { testCa } from "../support/Receiver.ts"
import { endpoint, owner, subscriber } from "../support/WebhookEngine.ts"

/** Owners, with one endpoint each, that the webhook benchmarks spread their events over. */
export const ENDPOINTS = Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 20)

/** The receiver: answers 200 at once and keeps the first arrival time of each `external_id` `bench-<i>`. */
const RECEIVER = `
const { parentPort, workerData } = require("node:worker_threads")
const { createServer } = require("node:https")
let arrivals = new Float64Array(0)
let count = 0
const server = createServer({ key: workerData.key, cert: workerData.cert, keepAliveTimeout: 60000 }, (req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const at = performance.timeOrigin + performance.now()
    count++
    const match = /"external_id":"bench-(\\d+)"/.exec(Buffer.concat(chunks).toString())
    if (match) {
      const i = Number(match[1])
      if (i < arrivals.length && arrivals[i] === 0) arrivals[i] = at
    }
    res.writeHead(200)
    res.end()
  })
})
server.listen(0, "127.0.0.1", () =>
  // Its thread's /proc entry, so the bench can tell the receiver's CPU time from the engine's process's other threads.
  parentPort.postMessage({ port: server.address().port, thread: require("node:fs").readlinkSync("/proc/thread-self") }),
)
parentPort.on("message", (message) => {
  if (message.reset !== undefined) {
    arrivals = new Float64Array(message.reset)
    count = 0
    parentPort.postMessage({ ok: true })
  } else {
    parentPort.postMessage({ count, arrivals })
  }
})
`

export interface ReceiverThread {
  readonly port: number
  /** `/proc/<pid>/task/<tid>` of the receiver's thread. */
  readonly thread: string
  readonly reset: (size: number) => Promise<void>
  readonly stats: () => Promise<{ readonly count: number; readonly arrivals: Float64Array }>
  readonly close: () => Promise<void>
}

export const startReceiverThread = () =>
  new Promise<ReceiverThread>((resolve, reject) => {
    const { key, cert } = testCa()
    const worker = new Worker(RECEIVER, { eval: true, workerData: { key, cert } })
    worker.unref()
    worker.once("error", reject)
    const ask = <A>(message: unknown) =>
      new Promise<A>((answer) => {
        worker.once("message", answer)
        worker.postMessage(message)
      })
    worker.once("message", ({ port, thread }: { port: number; thread: string }) =>
      resolve({
        port,
        thread: `/proc/${thread}`,
        reset: (size) => ask<unknown>({ reset: size }).then(() => undefined),
        stats: () => ask({}),
        close: () => worker.terminate().then(() => undefined),
      }),
    )
  })

export const now = () => performance.timeOrigin + performance.now()

export const body = (slug: string, i: number) =>
  JSON.stringify(
    makeEnvelope("move_out.initiated", slug, {
      move_out_id: i,
      external_id: `bench-${i}`,
      status: "initiated",
    }),
  )

/** Calls `send(i)` for i < count at `rate` per second (in ticks of 10 ms); the start time of each. */
export const paced = async (count: number, rate: number, send: (i: number) => Promise<unknown>) => {
  const started = new Float64Array(count)
  const pending: Array<Promise<unknown>> = []
  const t0 = performance.now()
  let i = 0
  while (i < count) {
    const due = Math.min(count, Math.floor(((performance.now() - t0) / 1000) * rate) + 1)
    for (; i < due; i++) {
      started[i] = now()
      pending.push(send(i))
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  await Promise.all(pending)
  return started
}

/**
 * `BENCH_WEBHOOK_ENDPOINTS` owners named `<name>-<n>`, each with one endpoint at `<origin>/<name>-<n>` subscribed
 * to `move_out.initiated` (their ids, in that order), and publishers of the bench's events spread over them: one,
 * and a backlog of `size`, 500 in flight.
 */
export const benchEndpoints = (origin: string, name: string) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const client = yield* NatsClient
    const slugs: Array<string> = []
    const endpoints: Array<number> = []
    for (let e = 0; e < ENDPOINTS; e++) {
      const o = yield* owner(`${name}-${e}`)
      const sub = yield* subscriber({ ownerId: o.id })
      endpoints.push(yield* endpoint(sub.id, `${origin}/${name}-${e}`, ["move_out.initiated"]))
      slugs.push(o.slug)
    }
    const publishEvent = (i: number) => {
      const slug = slugs[i % slugs.length]!
      return client.js.publish(
        nats.subject(`events.${slug}.move_out.initiated`),
        Buffer.from(body(slug, i)),
        {
          msgID: randomUUID(),
        },
      )
    }
    const publishBacklog = (size: number) =>
      Effect.promise(async () => {
        for (let i = 0; i < size; i += 500) {
          await Promise.all(Array.from({ length: Math.min(500, size - i) }, (_, j) => publishEvent(i + j)))
        }
      })
    return { endpoints, publishEvent, publishBacklog }
  })

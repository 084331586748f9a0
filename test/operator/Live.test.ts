import net from "node:net"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { LIVE_BUFFER_BYTES } from "../../backend/operator/LiveFeed.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { IDLE_TIMEOUT_MS } from "../../backend/operator/Sessions.ts"
import {
  advanceClock,
  call,
  consolePort,
  consoleService,
  holdClock,
  operatorSession,
} from "../support/Operator.ts"
import { eventually, openEventStream } from "../support/Streams.ts"
import { endpoint, owner, query, subscriber } from "../support/WebhookEngine.ts"

const service = consoleService()

/** An open `GET /api/live` read with fetch: the text so far, and the stream ended or not. */
const openLive = (cookie: string) =>
  Effect.flatMap(consolePort, (port) => openEventStream(`http://127.0.0.1:${port}/api/live`, { cookie }))

/** The value of a metric without labels on the console's `/metrics`. */
const metric = (name: string) =>
  Effect.map(call("GET", "/metrics"), (answer) => {
    const line = answer.text.split("\n").find((l) => l.startsWith(`${name} `))
    return Number(line?.split(" ")[1] ?? "0")
  })

const statusMessage = (deliveryId: number, endpointId: number, status: string, reason = "") =>
  JSON.stringify({
    delivery_id: deliveryId,
    endpoint_id: endpointId,
    event: "policy.created",
    status,
    series: 1,
    attempt_number: 1,
    ...(reason ? { failure_reason: reason } : {}),
    at: new Date().toISOString(),
  })

describe("GET /api/live", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses a caller without a session", () =>
      Effect.gen(function* () {
        const answer = yield* call("GET", "/api/live")
        assert.strictEqual(answer.status, 401)
      }),
    )

    it.effect(
      "streams delivery status messages, endpoint changes and bulk-retry progress as they happen",
      () =>
        Effect.gen(function* () {
          const { cookie } = yield* operatorSession("live-viewer@console.test", "viewer")
          const live = yield* openLive(cookie)
          assert.match(live.response.headers.get("content-type") ?? "", /^text\/event-stream/)

          const nats = yield* Nats
          nats.publishUnacknowledged(
            nats.subject("webhooks.status.7"),
            new TextEncoder().encode(statusMessage(41, 7, "retrying", "Destination answered 503")),
          )
          const delivery = yield* live.until((text) => text.includes('"delivery_id":41'))
          assert.match(
            delivery,
            /event: delivery\ndata: \{[^\n]*"status":"retrying"[^\n]*"Destination answered 503"/,
          )

          const acme = yield* owner("live-acme")
          const sub = yield* subscriber({ ownerId: acme.id })
          const endpointId = yield* endpoint(sub.id, "https://example.test/hook", ["policy.created"])
          yield* live.until((text) => text.includes(`event: endpoint\ndata: {"id":"${endpointId}"}`))

          const [job] = yield* query(
            (sql) => sql<Array<{ id: string }>>`
              insert into bulk_retries (filter, rate_per_second, total, created_by)
              values ('{}', 1, 3, 'live@console.test') returning id::text`,
          )
          yield* query((sql) => sql`update bulk_retries set done = 2 where id = ${job!.id}`)
          yield* live.until((text) =>
            text.includes(
              `event: bulk_retry\ndata: {"id":"${job!.id}","status":"running","total":3,"done":2}`,
            ),
          )
        }),
    )

    it.effect("ends the stream when the session is signed out", () =>
      Effect.gen(function* () {
        const { cookie, csrf } = yield* operatorSession("live-leaver@console.test", "viewer")
        const live = yield* openLive(cookie)
        assert.strictEqual((yield* call("DELETE", "/api/session", { cookie, csrf })).status, 204)
        yield* eventually(
          Effect.sync(() => live.state),
          (state) => state.ended,
        )
        assert.include(live.state.text, "event: session_ended")
      }),
    )

    it.effect("ends the stream when the session times out, though the stream stayed open", () =>
      Effect.gen(function* () {
        yield* holdClock
        const { cookie } = yield* operatorSession("live-idle@console.test", "viewer")
        const live = yield* openLive(cookie)
        // The stream itself is no request: the session goes idle behind it, found at the next check (15 s).
        yield* advanceClock(IDLE_TIMEOUT_MS)
        yield* eventually(
          Effect.sync(() => live.state),
          (state) => state.ended,
        )
        assert.include(live.state.text, "event: session_ended")
        assert.strictEqual((yield* call("GET", "/api/live", { cookie })).status, 401)
      }),
    )

    it.effect("drops a connection that stops reading once its buffer is full, and counts it", () =>
      Effect.gen(function* () {
        const { cookie } = yield* operatorSession("live-slow@console.test", "viewer")
        const port = yield* consolePort
        const droppedBefore = yield* metric("console_live_dropped_total")
        const connectionsBefore = yield* metric("console_live_connections")

        // A client that sends its request and then never reads: no 'data' listener, so the socket stays paused.
        const socket = net.connect({ host: "127.0.0.1", port })
        const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()))
        yield* Effect.addFinalizer(() => Effect.sync(() => socket.destroy()))
        socket.write(`GET /api/live HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\n\r\n`)
        yield* eventually(metric("console_live_connections"), (n) => n > connectionsBefore)

        // Status messages of 8 KiB each, a batch at a time, until the server gives up on the client. Far more
        // than the buffer and any socket buffers could hold is the limit: past it the bound does not hold.
        const nats = yield* Nats
        const reason = "x".repeat(8 * 1024)
        const encoder = new TextEncoder()
        let published = 0
        let dropped = droppedBefore
        while (dropped === droppedBefore) {
          assert.isBelow(published, 64 * 1024 * 1024, "the slow connection was never dropped")
          for (let i = 0; i < 64; i++) {
            const body = encoder.encode(statusMessage(1_000 + i, 9, "retrying", reason))
            nats.publishUnacknowledged(nats.subject("webhooks.status.9"), body)
            published += body.byteLength
          }
          yield* Effect.sleep("20 millis")
          dropped = yield* metric("console_live_dropped_total")
        }
        assert.strictEqual(dropped, droppedBefore + 1)
        assert.isAbove(published, LIVE_BUFFER_BYTES)
        // The server let go of it: the connection is no longer counted, and the socket is closed once read.
        yield* eventually(metric("console_live_connections"), (n) => n === connectionsBefore)
        socket.resume()
        yield* Effect.promise(() => closed)
      }),
    )
  })
})

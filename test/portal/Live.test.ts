import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { CSRF_HEADER } from "../../backend/portal/Api.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { authEnv, authService, gatewayPort } from "../support/Auth.ts"
import { openSession, ownerSessions, ownerWithEndpoint, type Session, call } from "../support/Portal.ts"
import { eventually, openEventStream } from "../support/Streams.ts"
import { api, createEndpoint, ownerEndpoints } from "../support/Webhooks.ts"

const env = authEnv({ ROLES: "partner-api,portal", PORTAL_PORT: "0", PORTAL_BASE_URL: "https://portal.test" })
const service = authService({ env })

/** An open `GET /portal/api/live` read with fetch: the text so far, and the stream ended or not. */
const openLive = (caller: Session) =>
  Effect.flatMap(gatewayPort("portal"), (port) =>
    openEventStream(`http://127.0.0.1:${port}/portal/api/live`, {
      cookie: caller.cookie,
      [CSRF_HEADER]: caller.csrf,
    }),
  )

/** A delivery status message as the delivery engine publishes it. */
const publishStatus = (deliveryId: number, endpointId: number, status: string) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    nats.publishUnacknowledged(
      nats.subject(`webhooks.status.${endpointId}`),
      new TextEncoder().encode(
        JSON.stringify({
          delivery_id: deliveryId,
          endpoint_id: endpointId,
          event: "policy.created",
          status,
          series: 1,
          attempt_number: 1,
          at: new Date().toISOString(),
        }),
      ),
    )
  })

/** The `data` of every frame named `name` in `text`. */
const frames = (text: string, name: string) =>
  [...text.matchAll(new RegExp(`event: ${name}\\ndata: ([^\\n]*)\\n`, "g"))].map(
    (match) => JSON.parse(match[1]!) as Record<string, unknown>,
  )

describe("GET /portal/api/live", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("refuses a caller without a session", () =>
      Effect.gen(function* () {
        const answer = yield* call(undefined, "GET", "/portal/api/live")
        assert.strictEqual(answer.status, 401)
      }),
    )

    it.effect("streams the holder's deliveries, endpoints and recoveries only", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("live-a")
        const b = yield* ownerWithEndpoint("live-b")
        const caller = yield* openSession(a.partner, ownerSessions("live-a"))
        const live = yield* openLive(caller)
        assert.match(live.response.headers.get("content-type") ?? "", /^text\/event-stream/)

        yield* publishStatus(901, b.endpoint.id, "retrying")
        yield* publishStatus(902, a.endpoint.id, "retrying")
        yield* live.until((text) => text.includes('"delivery_id":902'))
        const deliveries = frames(live.state.text, "delivery")
        assert.deepStrictEqual(
          deliveries.map((d) => [d.delivery_id, d.endpoint_id, d.status]),
          [[902, a.endpoint.id, "retrying"]],
          "B's delivery is not sent to A",
        )

        // A new endpoint of A's is A's at once; B's is never told.
        const theirs = yield* createEndpoint(b.partner, ownerEndpoints("live-b"), {
          name: "B's second",
          destination_url: "https://hooks.example.com/live-b-2",
          events: ["policy.created"],
        })
        const mine = yield* createEndpoint(a.partner, ownerEndpoints("live-a"), {
          name: "A's second",
          destination_url: "https://hooks.example.com/live-a-2",
          events: ["policy.created"],
        })
        yield* live.until((text) => text.includes(`event: endpoint\ndata: {"id":"${mine.id}"}`))
        yield* publishStatus(903, mine.id, "delivered")
        yield* live.until((text) => text.includes('"delivery_id":903'))
        assert.notInclude(live.state.text, `{"id":"${theirs.id}"}`)

        const made = yield* call(caller, "POST", `/portal/api/endpoints/${a.endpoint.id}/recoveries`, {
          body: {
            since: new Date(Date.now() - 3600_000).toISOString(),
          },
        })
        assert.strictEqual(made.status, 201, made.text)
        const recovery = (made.body.recovery as { id: number }).id
        yield* live.until((text) => frames(text, "recovery").some((r) => r.id === recovery))
        const shown = frames(live.state.text, "recovery").find((r) => r.id === recovery)!
        assert.deepStrictEqual(shown, made.body.recovery as Record<string, unknown>)
      }),
    )

    it.effect("ends with session_ended once the holder's sessions are ended", () =>
      Effect.gen(function* () {
        const a = yield* ownerWithEndpoint("live-ended")
        const caller = yield* openSession(a.partner, ownerSessions("live-ended"))
        const live = yield* openLive(caller)
        const ended = yield* api(a.partner, "DELETE", ownerSessions("live-ended"))
        assert.strictEqual(ended.status, 204, ended.text)
        // Found at the stream's next session check.
        yield* eventually(
          Effect.sync(() => live.state),
          (state) => state.ended,
        )
        assert.include(live.state.text, "event: session_ended")
      }),
    )
  })
})

import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { startReceiver, testCa } from "../support/Receiver.ts"
import { call, consoleService, operatorSession } from "../support/Operator.ts"
import { eventually } from "../support/Streams.ts"
import {
  deliveriesOf,
  endpoint,
  examplePayload,
  owner,
  publishEvent,
  query,
  subscriber,
} from "../support/WebhookEngine.ts"

/** The console and the workers, delivering to the test receiver. */
const service = consoleService({
  ROLES: "console,workers",
  WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
  WEBHOOK_BACKOFF_UNIT_MS: "5",
  WEBHOOK_TIMEOUT_MS: "2000",
})

describe("replays from the console", () => {
  layer(service.layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("previews, starts, shows and cancels a replay of any endpoint, audited", () =>
      Effect.gen(function* () {
        const viewer = yield* operatorSession("viewer@example.com", "viewer")
        const ops = yield* operatorSession("ops@example.com", "operator")
        const receiver = yield* startReceiver
        const acme = yield* owner("console-replay")
        const sub = yield* subscriber({ ownerId: acme.id })
        // An endpoint there before the events: once it has their deliveries, the router is done with them, and
        // the endpoint made next can only get them by a replay.
        const control = yield* endpoint(sub.id, receiver.url("/control"), ["prospect.ready"])
        const since = new Date(Date.now() - 1000).toISOString()
        yield* Effect.sleep("20 millis")
        const published = yield* Effect.forEach(Array.from({ length: 3 }), () =>
          publishEvent("prospect.ready", acme.slug, examplePayload("prospect.ready")),
        )
        yield* eventually(deliveriesOf(control), (rs) => rs.length === 3)
        const endpointId = yield* endpoint(sub.id, receiver.url("/console"), ["prospect.ready"])
        const base = `/api/endpoints/${endpointId}/replays`
        const as = (session: typeof ops) => ({ cookie: session.cookie, csrf: session.csrf })

        const refused = yield* call("POST", base, { ...as(viewer), body: { since } })
        assert.strictEqual(refused.status, 403, "a viewer cannot start one")

        const preview = yield* call("POST", `${base}/preview`, { ...as(ops), body: { since } })
        assert.strictEqual(preview.status, 200, preview.text)
        assert.deepStrictEqual(preview.body, { count: 3 })
        assert.lengthOf(yield* deliveriesOf(endpointId), 0, "a preview sends nothing")

        const invalid = yield* call("POST", base, { ...as(ops), body: { since: "soon" } })
        assert.strictEqual(invalid.status, 422, invalid.text)
        assert.deepStrictEqual(invalid.body.replay, {
          since: "Since must be an RFC 3339 time, e.g. 2026-11-20T08:00:00Z",
        })

        const started = yield* call("POST", base, { ...as(ops), body: { since } })
        assert.strictEqual(started.status, 202, started.text)
        assert.strictEqual(started.body.replay.total, 3)
        const id = started.body.replay.id as number
        const done = yield* eventually(
          call("GET", `${base}/${id}`, as(viewer)),
          (a) => a.body?.replay?.status === "completed",
        )
        assert.strictEqual(done.body.replay.sent, 3)
        const rows = yield* eventually(
          deliveriesOf(endpointId),
          (rs) => rs.length === 3 && rs.every((r) => r.status === "delivered"),
        )
        assert.deepStrictEqual(rows.map((r) => r.event_id).sort(), published.map((p) => p.eventId).sort())
        const list = yield* call("GET", base, as(viewer))
        assert.strictEqual(list.status, 200, list.text)
        assert.deepStrictEqual(
          list.body.replays.map((r: { id: number }) => r.id),
          [id],
        )

        // Nothing left to send: a second replay completes at once, with nothing to cancel.
        const again = yield* call("POST", base, { ...as(ops), body: { since } })
        assert.strictEqual(again.body.replay.total, 0)
        assert.strictEqual(again.body.replay.status, "completed")

        // A replay of a suspended endpoint waits, so it is still running when canceled.
        const suspended = yield* endpoint(sub.id, receiver.url("/suspended"), ["prospect.ready"], "suspended")
        const waitingBase = `/api/endpoints/${suspended}/replays`
        const waiting = yield* call("POST", waitingBase, { ...as(ops), body: { since } })
        assert.strictEqual(waiting.body.replay.total, 3)
        assert.strictEqual(waiting.body.replay.status, "running")
        const canceled = yield* call("POST", `${waitingBase}/${waiting.body.replay.id}/cancel`, as(ops))
        assert.strictEqual(canceled.status, 200, canceled.text)
        assert.strictEqual(canceled.body.replay.status, "canceled")
        assert.strictEqual(canceled.body.replay.sent, 0)
        const kept = yield* query(
          (sql) => sql<Array<{ n: number }>>`select count(*)::int as n from webhook_replay_events`,
        )
        assert.strictEqual(kept[0]!.n, 0, "an ended replay keeps none of its events")
        const missing = yield* call("POST", `${base}/999999/cancel`, as(ops))
        assert.strictEqual(missing.status, 404, missing.text)
        assert.strictEqual(missing.body.error, "Replay not found.")

        const audit = yield* query(
          (sql) => sql<Array<{ actor: string; action: string; target: string; channel: string }>>`
            select actor, action, target, channel from audit_log
            where action like 'webhook_replays.%' order by id`,
        )
        assert.deepStrictEqual(
          audit.map((a) => [a.action, a.target, a.channel]),
          [
            ["webhook_replays.start", `endpoint:${endpointId}`, "console"],
            ["webhook_replays.start", `endpoint:${endpointId}`, "console"],
            ["webhook_replays.start", `endpoint:${suspended}`, "console"],
            ["webhook_replays.cancel", `endpoint:${suspended}`, "console"],
          ],
        )
        assert.isTrue(
          audit.every((a) => a.actor === audit[0]!.actor && a.actor !== ""),
          "the operator",
        )
      }),
    )
  })
})

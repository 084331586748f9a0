import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { Secrets } from "../../backend/webhooks/endpoints/Secrets.ts"
import { replayRunnerLayer } from "../../backend/webhooks/replays/ReplayRunner.ts"
import { authEnv, authService, createOwner, FORBIDDEN } from "../support/Auth.ts"
import { startReceiver, testCa } from "../support/Receiver.ts"
import { eventually } from "../support/Streams.ts"
import { deliveriesOf, examplePayload, publishEvent, verifySignature } from "../support/WebhookEngine.ts"
import {
  api,
  createEndpoint,
  ENDPOINT,
  ownerEndpoints,
  provisionProvider,
  providerEndpoints,
  type WebhookPartner,
  webhookPartner,
} from "../support/Webhooks.ts"

/** The partner gateway and the workers in one service, delivering to the test receiver. */
const replayService = () =>
  authService({
    env: authEnv({
      ROLES: "partner-api,workers",
      WEBHOOK_EXTRA_CA_FILE: testCa().caFile,
      WEBHOOK_BACKOFF_UNIT_MS: "5",
      WEBHOOK_TIMEOUT_MS: "2000",
    }),
  })

interface ReplayBody {
  readonly id: number
  readonly endpoint_id: number
  readonly status: string
  readonly total: number
  readonly sent: number
  readonly since: string
  readonly until: string
  readonly events: ReadonlyArray<string>
  readonly created_at: string
  readonly ended_at: string | null
}

const replayOf = (answer: { readonly body: Record<string, unknown> | undefined }) =>
  answer.body!.replay as ReplayBody

/** Asks for a replay; dies unless it was accepted. */
const replay = (partner: WebhookPartner, endpointPath: string, body: unknown) =>
  Effect.gen(function* () {
    const answer = yield* api(partner, "POST", `${endpointPath}/replay`, body)
    if (answer.status !== 202)
      return yield* Effect.die(new Error(`replay answered ${answer.status}: ${answer.text}`))
    assert.strictEqual(answer.body!.status_code, 202)
    return replayOf(answer)
  })

/** Waits until the replay has ended, and returns it as the API shows it. */
const ended = (partner: WebhookPartner, endpointPath: string, id: number) =>
  eventually(
    Effect.map(api(partner, "GET", `${endpointPath}/replays/${id}`), replayOf),
    (r) => r.status !== "running",
  )

const ownerSecret = (slug: string) =>
  Secrets.use((secrets) => secrets.show({ kind: "owner", slug }, "test")).pipe(
    Effect.provide(Secrets.layer),
    Effect.orDie,
    Effect.map((shown) => shown.map((s) => s.secret)),
  )

const tick = Effect.sleep("20 millis")

/**
 * An endpoint made before a test's events: once it has `count` deliveries, the router is done with those events,
 * so an endpoint made after can only get them by a replay.
 */
const controlEndpoint = (partner: WebhookPartner, base: string, url: string, events: ReadonlyArray<string>) =>
  Effect.map(createEndpoint(partner, base, { name: "Control", destination_url: url, events }), (control) => ({
    routed: (count: number) => eventually(deliveriesOf(control.id), (rs) => rs.length === count),
  }))

describe("webhook replays", () => {
  layer(replayService().layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      "an endpoint made after ten prospect.ready events gets those ten, signed, once each; a second replay sends nothing",
      () =>
        Effect.gen(function* () {
          const slug = "replay-ten"
          yield* createOwner(slug)
          const partner = yield* webhookPartner({ owners: [slug] })
          const receiver = yield* startReceiver
          // The store's time is the server's; a margin keeps `since` before the first event whatever the skew.
          const control = yield* controlEndpoint(partner, ownerEndpoints(slug), receiver.url("/early"), [
            "prospect.ready",
          ])
          const since = new Date(Date.now() - 1000).toISOString()
          yield* tick
          const published = yield* Effect.forEach(Array.from({ length: 10 }), () =>
            publishEvent("prospect.ready", slug, examplePayload("prospect.ready")),
          )
          // Another owner's event, and one of an event the endpoint does not subscribe to: neither is replayed.
          yield* createOwner("replay-other")
          yield* publishEvent("prospect.ready", "replay-other", examplePayload("prospect.ready"))
          yield* publishEvent("policy.created", slug, examplePayload("policy.created"))

          yield* control.routed(10)
          const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), {
            name: "Late",
            destination_url: receiver.url("/late"),
            events: ["prospect.ready"],
          })
          const path = `${ownerEndpoints(slug)}/${endpoint.id}`
          const started = yield* replay(partner, path, { since })
          assert.strictEqual(started.total, 10)
          assert.strictEqual(started.endpoint_id, endpoint.id)
          assert.deepStrictEqual(started.events, ["prospect.ready"])
          assert.strictEqual(started.since, new Date(since).toISOString())

          const done = yield* ended(partner, path, started.id)
          assert.strictEqual(done.status, "completed")
          assert.strictEqual(done.sent, 10)
          assert.isNotNull(done.ended_at)

          const rows = yield* eventually(
            deliveriesOf(endpoint.id),
            (rs) => rs.length === 10 && rs.every((r) => r.status === "delivered"),
          )
          assert.deepStrictEqual(
            rows.map((r) => r.event_id).sort(),
            published.map((p) => p.eventId).sort(),
            "one delivery per replayed event",
          )
          const received = receiver.received("/late")
          assert.strictEqual(received.length, 10, "each event received once")
          const secrets = yield* ownerSecret(slug)
          assert.deepStrictEqual(
            received.map((r) => r.body.toString("utf8")).sort(),
            published.map((p) => p.body).sort(),
            "the bodies as they were published",
          )
          for (const request of received) {
            assert.deepStrictEqual(
              verifySignature(request.headers, request.body, secrets).verifiedBy,
              secrets,
            )
            assert.strictEqual(request.headers["x-webhook-event"], "prospect.ready")
          }

          const again = yield* replay(partner, path, { since })
          assert.strictEqual(again.total, 0, "everything was delivered already")
          assert.strictEqual(again.status, "completed")
          // A control event after the second replay: once it is delivered, the replay has had every chance.
          yield* publishEvent("prospect.ready", slug, examplePayload("prospect.ready"))
          yield* eventually(
            deliveriesOf(endpoint.id),
            (rs) => rs.length === 11 && rs.every((r) => r.status === "delivered"),
          )
          assert.strictEqual(receiver.received("/late").length, 11, "nothing sent twice")
        }),
    )

    it.effect("replays only the events asked for, up to until", () =>
      Effect.gen(function* () {
        const slug = "replay-filter"
        yield* createOwner(slug)
        const partner = yield* webhookPartner({ owners: [slug] })
        const receiver = yield* startReceiver
        const control = yield* controlEndpoint(partner, ownerEndpoints(slug), receiver.url("/control"), [
          "prospect.ready",
          "policy.created",
        ])
        const since = new Date(Date.now() - 1000).toISOString()
        yield* tick
        const ready = yield* publishEvent("prospect.ready", slug, examplePayload("prospect.ready"))
        yield* publishEvent("policy.created", slug, examplePayload("policy.created"))
        yield* tick
        const until = new Date().toISOString()
        yield* tick
        yield* publishEvent("prospect.ready", slug, examplePayload("prospect.ready"))
        yield* control.routed(3)
        const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), {
          name: "Both",
          destination_url: receiver.url("/both"),
          events: ["prospect.ready", "policy.created"],
        })
        const path = `${ownerEndpoints(slug)}/${endpoint.id}`
        const started = yield* replay(partner, path, { since, until, events: ["prospect.ready"] })
        assert.strictEqual(started.total, 1)
        yield* ended(partner, path, started.id)
        const rows = yield* eventually(deliveriesOf(endpoint.id), (rs) =>
          rs.every((r) => r.status === "delivered"),
        )
        assert.deepStrictEqual(
          rows.map((r) => r.event_id),
          [ready.eventId],
        )
      }),
    )

    it.effect("a provider's endpoint is replayed on the provider's route, with the owners it covers", () =>
      Effect.gen(function* () {
        yield* createOwner("replay-covered")
        yield* createOwner("replay-covered-too")
        yield* createOwner("replay-uncovered")
        yield* provisionProvider("replay-platform", { owners: ["replay-covered", "replay-covered-too"] })
        const partner = yield* webhookPartner({ provider: "replay-platform" })
        const receiver = yield* startReceiver
        const control = yield* controlEndpoint(
          partner,
          providerEndpoints("replay-platform"),
          receiver.url("/control"),
          ["prospect.ready"],
        )
        const since = new Date(Date.now() - 1000).toISOString()
        yield* tick
        const covered = [
          yield* publishEvent("prospect.ready", "replay-covered", examplePayload("prospect.ready")),
          yield* publishEvent("prospect.ready", "replay-covered-too", examplePayload("prospect.ready")),
        ]
        yield* publishEvent("prospect.ready", "replay-uncovered", examplePayload("prospect.ready"))
        yield* control.routed(2)
        const endpoint = yield* createEndpoint(partner, providerEndpoints("replay-platform"), {
          name: "Platform",
          destination_url: receiver.url("/platform"),
          events: ["prospect.ready"],
        })
        const path = `${providerEndpoints("replay-platform")}/${endpoint.id}`
        const started = yield* replay(partner, path, { since })
        assert.strictEqual(started.total, 2)
        yield* ended(partner, path, started.id)
        const rows = yield* eventually(
          deliveriesOf(endpoint.id),
          (rs) => rs.length === 2 && rs.every((r) => r.status === "delivered"),
        )
        assert.deepStrictEqual(rows.map((r) => r.event_id).sort(), covered.map((c) => c.eventId).sort())
        assert.strictEqual(receiver.received("/platform").length, 2)
      }),
    )

    it.effect("a running replay can be canceled: what was not sent is not sent", () =>
      Effect.gen(function* () {
        const slug = "replay-cancel"
        yield* createOwner(slug)
        const partner = yield* webhookPartner({ owners: [slug] })
        const receiver = yield* startReceiver
        const control = yield* controlEndpoint(partner, ownerEndpoints(slug), receiver.url("/control"), [
          "prospect.ready",
        ])
        const since = new Date(Date.now() - 1000).toISOString()
        yield* tick
        // More than one batch: the replay is still running after its first second.
        yield* Effect.forEach(Array.from({ length: 60 }), () =>
          publishEvent("prospect.ready", slug, examplePayload("prospect.ready")),
        )
        yield* control.routed(60)
        const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), {
          ...ENDPOINT,
          destination_url: receiver.url("/cancel"),
          events: ["prospect.ready"],
        })
        // Suspended, so the replay waits: the cancel finds it running whatever the machine's speed.
        const suspend = yield* api(partner, "PUT", `${ownerEndpoints(slug)}/${endpoint.id}`, {
          endpoint: { status: "suspended" },
        })
        assert.strictEqual(suspend.status, 200, suspend.text)
        const path = `${ownerEndpoints(slug)}/${endpoint.id}`
        const started = yield* replay(partner, path, { since })
        assert.strictEqual(started.total, 60)
        assert.strictEqual(started.status, "running")
        const canceled = yield* api(partner, "POST", `${path}/replays/${started.id}/cancel`)
        assert.strictEqual(canceled.status, 200, canceled.text)
        assert.strictEqual(replayOf(canceled).status, "canceled")
        assert.isNotNull(replayOf(canceled).ended_at)
        const active = yield* api(partner, "PUT", path, { endpoint: { status: "active" } })
        assert.strictEqual(active.status, 200, active.text)
        // A second cancel answers the replay as it ended.
        const twice = yield* api(partner, "POST", `${path}/replays/${started.id}/cancel`)
        assert.strictEqual(twice.status, 200, twice.text)
        assert.strictEqual(replayOf(twice).status, "canceled")
        // A control replay of the same range on the now active endpoint runs to its end; the canceled one
        // sent nothing in the meantime.
        const controlReplay = yield* replay(partner, path, { since })
        yield* ended(partner, path, controlReplay.id)
        const shown = yield* api(partner, "GET", `${path}/replays/${started.id}`)
        assert.strictEqual(replayOf(shown).sent, 0)
        assert.strictEqual(replayOf(shown).status, "canceled")
      }),
    )

    it.effect("refuses bad input with 400 and 422 in the contract's shape", () =>
      Effect.gen(function* () {
        const slug = "replay-invalid"
        yield* createOwner(slug)
        const partner = yield* webhookPartner({ owners: [slug] })
        const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), {
          ...ENDPOINT,
          events: ["prospect.ready"],
        })
        const path = `${ownerEndpoints(slug)}/${endpoint.id}/replay`
        const notJson = yield* api(partner, "POST", path, "{")
        assert.strictEqual(notJson.status, 400, notJson.text)
        assert.deepStrictEqual(notJson.body, { status_code: 400, error: "Request body is not valid JSON." })

        const cases: ReadonlyArray<readonly [unknown, Record<string, string>]> = [
          [{}, { since: "Since can't be blank" }],
          [[], { base: "Replay must be an object with since" }],
          [{ since: "yesterday" }, { since: "Since must be an RFC 3339 time, e.g. 2026-11-20T08:00:00Z" }],
          [{ since: "2026-11-20" }, { since: "Since must be an RFC 3339 time, e.g. 2026-11-20T08:00:00Z" }],
          [
            { since: new Date(Date.now() + 3_600_000).toISOString() },
            { since: "Since must not be in the future" },
          ],
          [
            {
              since: new Date(Date.now() - 60_000).toISOString(),
              until: new Date(Date.now() - 120_000).toISOString(),
            },
            { until: "Until must not be before since" },
          ],
          [
            { since: new Date(Date.now() - 60_000).toISOString(), events: ["policy.created"] },
            { events: "Events must be events the endpoint subscribes to, not policy.created" },
          ],
          [
            { since: new Date(Date.now() - 60_000).toISOString(), events: [] },
            { events: "Events can't be blank" },
          ],
          [
            { since: new Date(Date.now() - 60_000).toISOString(), events: "prospect.ready" },
            { events: "Events must be an array of event names" },
          ],
        ]
        for (const [body, fields] of cases) {
          const answer = yield* api(partner, "POST", path, body)
          assert.strictEqual(answer.status, 422, answer.text)
          assert.deepStrictEqual(
            answer.body,
            {
              status_code: 422,
              error: "Invalid replay params.",
              replay: fields,
              errors: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, [v]])),
            },
            JSON.stringify(body),
          )
        }
      }),
    )

    it.effect("answers 404 for an unknown endpoint or replay, and 403 without the scope", () =>
      Effect.gen(function* () {
        const slug = "replay-missing"
        yield* createOwner(slug)
        yield* createOwner("replay-neighbour")
        const partner = yield* webhookPartner({ owners: [slug, "replay-neighbour"] })
        const since = new Date(Date.now() - 60_000).toISOString()
        const missing = yield* api(partner, "POST", `${ownerEndpoints(slug)}/999999/replay`, { since })
        assert.strictEqual(missing.status, 404, missing.text)
        assert.deepStrictEqual(missing.body, { status_code: 404, error: "Endpoint not found." })

        const neighbours = yield* createEndpoint(partner, ownerEndpoints("replay-neighbour"))
        const elsewhere = yield* api(partner, "POST", `${ownerEndpoints(slug)}/${neighbours.id}/replay`, {
          since,
        })
        assert.strictEqual(elsewhere.status, 404, "another owner's endpoint is not reachable here")

        const mine = yield* createEndpoint(partner, ownerEndpoints(slug))
        const path = `${ownerEndpoints(slug)}/${mine.id}`
        for (const [method, suffix] of [
          ["GET", "/replays/999999"],
          ["POST", "/replays/999999/cancel"],
          ["GET", "/replays/x"],
        ] as const) {
          const answer = yield* api(partner, method, `${path}${suffix}`)
          assert.strictEqual(answer.status, 404, answer.text)
          assert.deepStrictEqual(answer.body, { status_code: 404, error: "Replay not found." })
        }
        const started = yield* replay(partner, path, { since })
        const neighbourPath = `${ownerEndpoints("replay-neighbour")}/${neighbours.id}`
        const notTheirs = yield* api(partner, "GET", `${neighbourPath}/replays/${started.id}`)
        assert.strictEqual(notTheirs.status, 404, "a replay is reachable only through its endpoint")

        const noScope = yield* webhookPartner({ owners: [slug], scopes: ["prospects:write"] })
        for (const [method, suffix] of [
          ["POST", "/replay"],
          ["GET", `/replays/${started.id}`],
          ["POST", `/replays/${started.id}/cancel`],
        ] as const) {
          const answer = yield* api(
            noScope,
            method,
            `${path}${suffix}`,
            method === "POST" ? { since } : undefined,
          )
          assert.strictEqual(answer.status, 403, answer.text)
          assert.strictEqual(answer.text, FORBIDDEN)
        }
      }),
    )
  })
})

describe("webhook replays past the stream's retention", () => {
  layer(replayService().layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a since before the oldest event kept is a 422 naming its time", () =>
      Effect.gen(function* () {
        const slug = "replay-retention"
        yield* createOwner(slug)
        const partner = yield* webhookPartner({ owners: [slug] })
        const receiver = yield* startReceiver
        const control = yield* controlEndpoint(partner, ownerEndpoints(slug), receiver.url("/control"), [
          "prospect.ready",
        ])
        const before = new Date(Date.now() - 1000).toISOString()
        yield* tick
        yield* publishEvent("prospect.ready", slug, examplePayload("prospect.ready"))
        yield* tick
        yield* publishEvent("prospect.ready", slug, examplePayload("prospect.ready"))
        yield* control.routed(2)
        // The stream drops its oldest message, as its age limit would.
        const nats = yield* Nats
        const client = yield* NatsClient
        const stream = nats.streamName("EVENTS")
        const first = yield* Effect.promise(() => client.jsm.streams.info(stream))
        yield* Effect.promise(() => client.jsm.streams.deleteMessage(stream, first.state.first_seq))
        const kept = yield* Effect.promise(() => client.jsm.streams.info(stream))
        const oldest = new Date(kept.state.first_ts).toISOString()

        const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), {
          ...ENDPOINT,
          events: ["prospect.ready"],
        })
        const path = `${ownerEndpoints(slug)}/${endpoint.id}`
        const answer = yield* api(partner, "POST", `${path}/replay`, { since: before })
        assert.strictEqual(answer.status, 422, answer.text)
        assert.deepStrictEqual(answer.body, {
          status_code: 422,
          error: `Since is before the oldest event kept, ${oldest}.`,
          replay: { since: `Since must be ${oldest} or later (the oldest event kept)` },
          errors: { since: [`Since must be ${oldest} or later (the oldest event kept)`] },
        })
        const fromOldest = yield* replay(partner, path, { since: oldest })
        assert.strictEqual(fromOldest.total, 1, "the event kept is replayed from its own time")
      }),
    )
  })
})

describe("webhook replays across a restart", () => {
  // The partner gateway alone: no process sends replays until the test starts a runner.
  layer(authService().layer, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("a replay asked for while no worker runs is sent by the next runner, from its rows", () =>
      Effect.gen(function* () {
        const slug = "replay-restart"
        yield* createOwner(slug)
        const partner = yield* webhookPartner({ owners: [slug] })
        const since = new Date(Date.now() - 1000).toISOString()
        yield* tick
        const published = yield* Effect.forEach(Array.from({ length: 3 }), () =>
          publishEvent("prospect.ready", slug, examplePayload("prospect.ready")),
        )
        // No router runs here either: the endpoint has no delivery of the events but by the replay.
        const endpoint = yield* createEndpoint(partner, ownerEndpoints(slug), {
          ...ENDPOINT,
          events: ["prospect.ready"],
        })
        const path = `${ownerEndpoints(slug)}/${endpoint.id}`
        const started = yield* replay(partner, path, { since })
        assert.strictEqual(started.total, 3)
        const shown = yield* api(partner, "GET", `${path}/replays/${started.id}`)
        assert.deepStrictEqual([replayOf(shown).status, replayOf(shown).sent], ["running", 0])

        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(replayRunnerLayer, scope)
        const done = yield* ended(partner, path, started.id)
        yield* Scope.close(scope, Exit.void)
        assert.deepStrictEqual([done.status, done.sent], ["completed", 3])
        const rows = yield* deliveriesOf(endpoint.id)
        assert.deepStrictEqual(rows.map((r) => r.event_id).sort(), published.map((p) => p.eventId).sort())
      }),
    )
  })
})

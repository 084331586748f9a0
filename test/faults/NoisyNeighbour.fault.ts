import { loadavg } from "node:os"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { SLOW_AFTER_TIMEOUTS } from "../../backend/webhooks/delivery/EndpointPlaces.ts"
import { ORIGIN_CONNECTIONS } from "../../backend/webhooks/delivery/Egress.ts"
import { FaultStack, faultStackLayer, recordFigure } from "../support/FaultStack.ts"
import { gatewayPort } from "../support/Auth.ts"
import { deadLetters } from "../support/FaultLoad.ts"
import { completeProspect, prospectSetUp } from "../support/Prospects.ts"
import { NEVER, type Receiver, startReceiver } from "../support/Receiver.ts"
import { postJson, type RosterPartner } from "../support/Roster.ts"
import { eventually } from "../support/Streams.ts"
import { endpoint, examplePayload, owner, publishEvent, query, subscriber } from "../support/WebhookEngine.ts"

/**
 * A noisy neighbour: owner A's receiver accepts connections and never answers, with thousands of deliveries queued
 * for it, while owner B's partner creates prospects at a steady rate. B's webhooks arrive about as fast as with A
 * idle, and A's receiver never holds more requests open than the per-endpoint cap, nor more connections than the
 * delivery engine's per-origin limit.
 */

/** The per-endpoint cap the workers run with (the setting's default, set so the case says what it asserts). */
const CAP = 16
const TIMEOUT_MS = 2000
const A_DELIVERIES = 3000
const B_PROSPECTS = 200
/**
 * Prospects POSTed just before each measured wave and not measured: the first requests after a pause (the
 * processes' very first ones, or the first after A's deliveries were queued) are slower than the rest with or
 * without a neighbour, so each measured wave starts warm.
 */
const WARM_UP_PROSPECTS = 30
/** B's POSTs: one every 100 ms (10 a second), each sent on its time whatever the answers before it. */
const B_INTERVAL_MS = 100
/** The criterion: B's p99 with A hanging within this factor of B's p99 with A idle. */
const P99_FACTOR = 1.5
/**
 * The idle p99 the factor applies to, at least: below it, half of the baseline is less than a busy shared
 * machine's own variation, and the criterion would measure the machine rather than the delivery engine. The limit
 * it gives stays far below A's deadline, the least an attempt of B's held behind one of A's would cost.
 */
const P99_FLOOR_MS = 300

const now = () => performance.timeOrigin + performance.now()

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/** The latencies' percentiles, with the machine's load average over the last minute (other work shares it). */
const summary = (latencies: ReadonlyArray<number>) => {
  const sorted = [...latencies].sort((a, b) => a - b)
  const round = (ms: number) => Math.round(ms)
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1)!),
    load_1m: Math.round(loadavg()[0]! * 100) / 100,
  }
}

/** The delivery actor's consumer of attempt messages, as the server reports it now. */
const attemptConsumer = Effect.gen(function* () {
  const nats = yield* Nats
  const client = yield* NatsClient
  return yield* Effect.promise(() =>
    client.jsm.consumers.info(nats.streamName("WEBHOOKS"), "webhook_delivery_p0"),
  )
})
/** Attempt messages handed out so far: first attempts, and those the scheduler sent again. */
const attemptMessages = Effect.map(attemptConsumer, (info) => info.delivered.consumer_seq)
/** Attempt messages not handed out yet. */
const attemptsPending = Effect.map(attemptConsumer, (info) => info.num_pending)

/** The partner's id of the prospect a `prospect.created` webhook is about. */
const createdId = (body: Buffer) =>
  (JSON.parse(body.toString("utf8")) as { data: { third_party_prospect: { id: string } } }).data
    .third_party_prospect.id

/**
 * `count` new prospects POSTed `B_INTERVAL_MS` apart, each on its time; per prospect, the time from its POST being
 * sent to its `prospect.created` webhook's arrival at `receiver` (the first, if it came twice).
 */
const prospectWave = (
  partner: RosterPartner,
  slug: string,
  source: string,
  prefix: string,
  count: number,
  receiver: Receiver,
  path: string,
) =>
  Effect.gen(function* () {
    const stack = yield* FaultStack
    const port = yield* gatewayPort("partner-api")
    const sentAt = new Map<string, number>()
    const statuses: Record<number, number> = {}
    const start = now()
    yield* stack.step(
      `${count} prospects POSTed at ${1000 / B_INTERVAL_MS} a second (${prefix})`,
      Effect.forEach(
        Array.from({ length: count }, (_, i) => i),
        (i) =>
          Effect.gen(function* () {
            const id = `${prefix}-${i}`
            yield* Effect.sleep(Math.max(0, start + i * B_INTERVAL_MS - now()))
            sentAt.set(id, now())
            const status = yield* Effect.promise(() =>
              fetch(`http://127.0.0.1:${port}/partners/${slug}/prospects`, {
                method: "POST",
                headers: { authorization: `Bearer ${partner.token}`, "content-type": "application/json" },
                body: JSON.stringify({ prospect: completeProspect(source, id) }),
                signal: AbortSignal.timeout(15_000),
              }).then(
                async (response) => {
                  await response.arrayBuffer()
                  return response.status
                },
                () => 0,
              ),
            )
            statuses[status] = (statuses[status] ?? 0) + 1
          }),
        { concurrency: "unbounded", discard: true },
      ),
    )
    assert.deepStrictEqual(statuses, { 200: count }, "every POST answered 200")
    const arrivals = () => {
      const first = new Map<string, number>()
      for (const request of receiver.received(path)) {
        const id = createdId(request.body)
        if (sentAt.has(id) && !first.has(id)) first.set(id, request.at)
      }
      return first
    }
    const arrived = yield* stack.step(
      `every prospect.created webhook of ${prefix} at B`,
      eventually(Effect.sync(arrivals), (first) => first.size === count),
      { seconds: 60, context: () => ({ arrived: arrivals().size }) },
    )
    return summary([...arrived].map(([id, at]) => at - sentAt.get(id)!))
  })

/** A's attempts recorded so far. */
const attemptsOf = (endpointId: number) =>
  query(
    (sql) => sql<Array<{ n: number }>>`
      select count(*)::int as n from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id
      where d.endpoint_id = ${endpointId}`,
  ).pipe(Effect.map(([row]) => row!.n))

describe("a noisy neighbour: one owner's receiver never answers", () => {
  layer(
    faultStackLayer({
      env: { WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(CAP) },
    }),
    { excludeTestServices: true, timeout: 300_000 },
  )((it) => {
    it.effect(
      `with ${A_DELIVERIES.toLocaleString("en")} deliveries queued for it, another owner's webhooks arrive within ${P99_FACTOR}x the p99 of the same run with it idle; it never holds more than the cap open`,
      () =>
        Effect.gen(function* () {
          const stack = yield* FaultStack
          yield* Effect.addFinalizer(() => stack.restore)

          // Owner B: a partner's owner, its endpoint subscribed to the event every new prospect fires.
          const source = "noisy-b"
          const { partner, slug } = yield* prospectSetUp("org-noisy-b", source)
          const healthy = yield* startReceiver
          const bPath = "/b"
          const created = yield* postJson<{ endpoint: { id: number } }>(
            partner,
            `/partners/${slug}/webhooks/endpoints`,
            {
              endpoint: {
                name: "healthy receiver",
                destination_url: healthy.url(bPath),
                events: ["prospect.created"],
              },
            },
          )
          assert.strictEqual(created.status, 200, created.text)

          // Owner A: its receiver accepts every connection and request and never answers.
          const hanging = yield* startReceiver
          const aPath = "/a"
          hanging.respond(aPath, () => NEVER)
          const ownerA = yield* owner("noisy-a")
          const subA = yield* subscriber({ ownerId: ownerA.id })
          const aEndpoint = yield* endpoint(subA.id, hanging.url(aPath), ["policy_application.quoted"])

          // Phase 1: A idle.
          yield* prospectWave(partner, slug, source, "idle-warm-up", WARM_UP_PROSPECTS, healthy, bPath)
          const idle = yield* prospectWave(partner, slug, source, "idle", B_PROSPECTS, healthy, bPath)
          yield* recordFigure("noisy neighbour: B's POST->webhook ms, A idle", idle)

          // Phase 2: A's deliveries queued, its receiver hanging, then B's wave again.
          const payload = examplePayload("policy_application.quoted")
          const publishedAt = now()
          yield* stack.step(
            `publish ${A_DELIVERIES} events for A`,
            Effect.forEach(
              Array.from({ length: A_DELIVERIES }),
              () => publishEvent("policy_application.quoted", ownerA.slug, payload),
              { concurrency: 50, discard: true },
            ),
          )
          const queued = query(
            (sql) => sql<Array<{ n: number }>>`
              select count(*)::int as n from webhook_deliveries where endpoint_id = ${aEndpoint}`,
          ).pipe(Effect.map(([row]) => row!.n))
          yield* stack.step(
            `${A_DELIVERIES} deliveries queued for A`,
            eventually(queued, (n) => n === A_DELIVERIES),
          )
          // A's attempts are under way: its first wave hangs at its receiver.
          yield* stack.step(
            "A's receiver holds requests",
            eventually(
              Effect.sync(() => hanging.open(aPath).now),
              (n) => n > 0,
            ),
          )
          // A slowed, as the console shows it, and every first attempt message of A's handed out: A's deliveries
          // wait in Postgres (at its cap or deferred), not in the stream ahead of B's messages. Any endpoint's burst
          // of attempt messages is handed out in order, answering or not, and before an endpoint is slowed its
          // attempts over the cap are deferred a backoff unit apart (the stack's unit is 5 ms): how soon that is
          // done is throughput, not fairness.
          const streak = query(
            (sql) => sql<Array<{ timeouts_in_row: number }>>`
              select timeouts_in_row from webhook_endpoint_health
              where endpoint_id = ${aEndpoint} and timeouts_in_row is not null
              order by bucket_start desc limit 1`,
          ).pipe(Effect.map(([row]) => row?.timeouts_in_row ?? 0))
          yield* stack.step(
            "A slowed",
            eventually(streak, (n) => n >= SLOW_AFTER_TIMEOUTS),
          )
          const slowedMs = Math.round(now() - publishedAt)
          yield* stack.step(
            "A's first attempt messages handed out",
            eventually(attemptsPending, (n) => n === 0),
          )
          const drainedMs = Math.round(now() - publishedAt)
          yield* prospectWave(partner, slug, source, "noisy-warm-up", WARM_UP_PROSPECTS, healthy, bPath)
          const aRequestsBefore = hanging.received(aPath).length
          const aAttemptsBefore = yield* attemptsOf(aEndpoint)
          const messagesBefore = yield* attemptMessages
          const noisy = yield* prospectWave(partner, slug, source, "noisy", B_PROSPECTS, healthy, bPath)
          const aRequests = hanging.received(aPath).length - aRequestsBefore
          const aAttempts = (yield* attemptsOf(aEndpoint)) - aAttemptsBefore
          const messages = (yield* attemptMessages) - messagesBefore
          const aOpen = hanging.open(aPath)
          const aConnections = hanging.connections()
          const aStatuses = yield* query(
            (sql) => sql<Array<{ status: string; n: number }>>`
              select status, count(*)::int as n from webhook_deliveries where endpoint_id = ${aEndpoint}
              group by status order by status`,
          )
          const limit = P99_FACTOR * Math.max(idle.p99, P99_FLOOR_MS)
          yield* recordFigure("noisy neighbour: B's POST->webhook ms, A hanging", noisy)
          yield* recordFigure("noisy neighbour: p99 ratio (A hanging / A idle) and the limit", {
            ratio: Math.round((noisy.p99 / idle.p99) * 100) / 100,
            limit_ms: limit,
          })
          yield* recordFigure("noisy neighbour: A's receiver", {
            most_open_requests: aOpen.most,
            cap: CAP,
            most_open_connections: aConnections.most,
            origin_connections: ORIGIN_CONNECTIONS,
            requests_during_b_wave: aRequests,
            attempts_recorded_during_b_wave: aAttempts,
            attempt_messages_during_b_wave: messages,
            slowed_after_publish_ms: slowedMs,
            first_messages_handed_out_after_publish_ms: drainedMs,
            requests_in_all: hanging.received(aPath).length,
            deliveries_by_status: Object.fromEntries(aStatuses.map((r) => [r.status, r.n])),
          })

          assert.isAbove(aRequests, 0, "A's deliveries were attempted during B's wave")
          assert.isAtMost(aOpen.most, CAP, "A's receiver had more requests open at once than the cap")
          assert.isAtMost(
            aConnections.most,
            ORIGIN_CONNECTIONS,
            "A's receiver had more connections open at once than the per-origin limit",
          )
          assert.isAtMost(
            noisy.p99,
            limit,
            `B's p99 with A hanging (${noisy.p99} ms) beyond ${P99_FACTOR}x its p99 with A idle (${idle.p99} ms, at least ${P99_FLOOR_MS})`,
          )
          assert.strictEqual(yield* deadLetters, 0)
          yield* stack.assertAlive
        }).pipe(Effect.scoped),
      300_000,
    )
  })
})

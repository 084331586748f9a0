import { assert } from "@effect/vitest"
import { Clock, Effect, Fiber, Ref } from "effect"
import { gatewayPort } from "./Auth.ts"
import type { FaultStackShape } from "./FaultStack.ts"
import { completeProspect } from "./Prospects.ts"
import type { RosterPartner } from "./Roster.ts"
import { type Receiver, startReceiver } from "./Receiver.ts"
import { query } from "./Roster.ts"
import { eventually } from "./Streams.ts"
import { endpoint, examplePayload, owner, publishEvent, subscriber } from "./WebhookEngine.ts"

/**
 * A steady load of prospect POSTs and GETs on the partner gateway, as a partner's integration makes it: each
 * POST loop creates a new prospect, POSTing it again after a 503 until it is accepted (a client retries what was
 * refused); a GET loop beside them reads the prospect accepted last. Every answer is counted by method and status; the body of each 5xx other than 503 is
 * kept; the time of every success is kept for measuring recovery.
 */

export interface LoadReport {
  /** `POST 200`, `GET 503`, `POST error` (no answer) ... with their counts. */
  readonly statuses: Readonly<Record<string, number>>
  /** Each answer that must never happen, a 5xx other than 503 or none at all (0), as `METHOD status body`. */
  readonly serverErrors: ReadonlyArray<string>
  /** Every prospect (source_prospect_id) a POST was answered 200 for. */
  readonly accepted: ReadonlyArray<string>
  /** Clock times (ms) of answered POSTs (200) and GETs (200). */
  readonly postOk: ReadonlyArray<number>
  readonly getOk: ReadonlyArray<number>
}

interface Answer {
  readonly status: number
  readonly text: string
}

/** One request with a 15 s limit; no answer (refused, reset, timed out) is status 0. */
const send = (port: number, method: string, path: string, token: string, body?: unknown) =>
  Effect.promise((): Promise<Answer> =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      signal: AbortSignal.timeout(15_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }).then(
      async (response) => ({ status: response.status, text: await response.text() }),
      (error: unknown) => ({ status: 0, text: String(error) }),
    ),
  )

export interface ProspectLoad {
  /** Lets each loop finish its prospect (retrying until accepted), then stops; what was answered. */
  readonly stop: Effect.Effect<LoadReport>
  /** Whether a POST, or a GET, was answered 200 at `since` or later. */
  readonly postOkSince: (since: number) => boolean
  readonly getOkSince: (since: number) => boolean
  /** The first prospect accepted at `since` or later, once there is one. */
  readonly acceptedSince: (since: number) => string | undefined
  /** The answers counted so far. */
  readonly statuses: () => Readonly<Record<string, number>>
}

/** Starts `loops` POST loops for new prospects of `source` at the owner `slug`, and one GET loop. */
export const prospectLoad = (
  partner: RosterPartner,
  slug: string,
  source: string,
  options: { readonly loops?: number; readonly pauseMs?: number } = {},
) =>
  Effect.gen(function* () {
    const port = yield* gatewayPort("partner-api")
    const state = {
      statuses: {} as Record<string, number>,
      serverErrors: [] as Array<string>,
      accepted: [] as Array<string>,
      acceptedAt: [] as Array<number>,
      postOk: [] as Array<number>,
      getOk: [] as Array<number>,
    }
    const running = yield* Ref.make(true)
    let next = 0
    const count = (method: string, answer: Answer) =>
      Effect.gen(function* () {
        const key = `${method} ${answer.status === 0 ? "error" : answer.status}`
        state.statuses[key] = (state.statuses[key] ?? 0) + 1
        if ((answer.status >= 500 && answer.status !== 503) || answer.status === 0)
          state.serverErrors.push(`${method} ${answer.status} ${answer.text.slice(0, 300)}`)
        if (answer.status === 200)
          (method === "POST" ? state.postOk : state.getOk).push(yield* Clock.currentTimeMillis)
      })
    const pause = Effect.sleep(`${options.pauseMs ?? 250} millis`)
    const poster = Effect.gen(function* () {
      while (yield* Ref.get(running)) {
        const id = `${source}-${next++}`
        const body = { prospect: completeProspect(source, id) }
        while (true) {
          const answer = yield* send(port, "POST", `/partners/${slug}/prospects`, partner.token, body)
          yield* count("POST", answer)
          if (answer.status === 200) break
          yield* pause
        }
        state.accepted.push(id)
        state.acceptedAt.push(yield* Clock.currentTimeMillis)
        yield* pause
      }
    })
    // GETs go on beside the POSTs, outage or not, for the prospect accepted last.
    const getter = Effect.gen(function* () {
      while (yield* Ref.get(running)) {
        const id = state.accepted.at(-1)
        if (id !== undefined)
          yield* count(
            "GET",
            yield* send(port, "GET", `/partners/${slug}/prospects/${source}/${id}`, partner.token),
          )
        yield* pause
      }
    })
    const fibers = yield* Effect.forEach(
      [...Array.from({ length: options.loops ?? 2 }, () => poster), getter],
      (l) => Effect.forkChild(l),
    )
    return {
      stop: Effect.gen(function* () {
        yield* Ref.set(running, false)
        yield* Fiber.joinAll(fibers)
        const { acceptedAt: _, ...report } = state
        return { ...report, statuses: { ...state.statuses } } satisfies LoadReport
      }),
      postOkSince: (since) => state.postOk.some((at) => at >= since),
      getOkSince: (since) => state.getOk.some((at) => at >= since),
      statuses: () => ({ ...state.statuses, accepted: state.accepted.length }),
      acceptedSince: (since) => state.accepted[state.acceptedAt.findIndex((at) => at >= since)],
    } satisfies ProspectLoad
  })

/** The `source_prospect_id` a prospect webhook's body is about. */
export const prospectOf = (body: Buffer) => /"source_prospect_id":"([^"]+)"/.exec(body.toString("utf8"))?.[1]

/** Each delivery id the receiver got on `path`, with how many requests carried it. */
export const requestsByDelivery = (receiver: Receiver, path: string) => {
  const counts = new Map<string, number>()
  for (const request of receiver.received(path)) {
    const id = request.headers["x-webhook-delivery"] ?? ""
    counts.set(id, (counts.get(id) ?? 0) + 1)
  }
  return counts
}

export interface DeliveryTotals {
  readonly deliveries: number
  readonly byStatus: Readonly<Record<string, number>>
  /** delivery id -> attempts recorded */
  readonly attempts: ReadonlyMap<string, number>
}

/** The endpoint's deliveries by status and each one's recorded attempts. */
export const deliveryTotals = (endpointId: number) =>
  Effect.gen(function* () {
    const rows = yield* query(
      (sql) => sql<Array<{ id: string; status: string; attempts: number }>>`
        select d.id::text, d.status, (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as attempts
        from webhook_deliveries d where d.endpoint_id = ${endpointId}`,
    )
    const byStatus: Record<string, number> = {}
    for (const row of rows) byStatus[row.status] = (byStatus[row.status] ?? 0) + 1
    return {
      deliveries: rows.length,
      byStatus,
      attempts: new Map(rows.map((r) => [r.id, r.attempts])),
    } satisfies DeliveryTotals
  })

/**
 * Every request the receiver got on `path` is a delivery of the endpoint, and is recorded as one of its attempts:
 * no delivery has more requests at the receiver than attempts in the database. The number of duplicates (requests
 * beyond the first of a delivery).
 */
export const assertDuplicatesRecorded = (receiver: Receiver, path: string, totals: DeliveryTotals) => {
  const requests = requestsByDelivery(receiver, path)
  const unrecorded: Array<string> = []
  let duplicates = 0
  for (const [delivery, n] of requests) {
    const attempts = totals.attempts.get(delivery)
    if (attempts === undefined || n > attempts)
      unrecorded.push(`${delivery}: ${n} requests, ${attempts ?? "no"} attempts recorded`)
    duplicates += n - 1
  }
  assert.deepStrictEqual(
    unrecorded.slice(0, 10),
    [],
    `${unrecorded.length} deliveries with unrecorded requests`,
  )
  return duplicates
}

/** How many rows `dead_letters` holds. */
export const deadLetters = query(
  (sql) => sql<Array<{ n: number }>>`select count(*)::int as n from dead_letters`,
).pipe(Effect.map(([row]) => row!.n))

/** The workers' `actor_failed_total{reason="defect"}`, summed over actors, from their metrics port. */
export const failedAsDefects = (workers: { readonly ports: Readonly<Record<string, number>> }) =>
  Effect.promise(() => fetch(`http://127.0.0.1:${workers.ports.metrics}/metrics`).then((r) => r.text())).pipe(
    Effect.map((text) =>
      text
        .split("\n")
        .filter((line) => line.startsWith("actor_failed_total{") && line.includes('reason="defect"'))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0),
    ),
  )

/** The ERROR lines a service process has logged so far. */
export const errorLines = (service: { readonly process: { readonly stdout: () => string } }) =>
  service.process
    .stdout()
    .split("\n")
    .filter((line) => line.includes('"level":"ERROR"'))

/**
 * After a fault: every prospect of `source` a POST was answered 200 for is stored once and `ready`, and has exactly
 * one delivery, `delivered`, that reached the receiver at `path`; every duplicate request there is recorded as an
 * attempt. The delivery totals and the number of duplicates.
 */
export const assertAcceptedDelivered = (
  stack: FaultStackShape,
  options: {
    readonly source: string
    readonly accepted: ReadonlySet<string>
    readonly endpointId: number
    readonly receiver: Receiver
    readonly path: string
  },
) =>
  Effect.gen(function* () {
    const { source, accepted, endpointId, receiver, path } = options
    const ready = yield* stack.step(
      "every accepted prospect decided",
      eventually(
        query(
          (sql) => sql<Array<{ source_prospect_id: string; status: string }>>`
            select source_prospect_id, status from prospects where source = ${source}`,
        ),
        (rows) => rows.length >= accepted.size && rows.every((r) => r.status === "ready"),
      ),
      { context: () => ({ accepted: accepted.size }) },
    )
    assert.sameMembers(
      ready.map((r) => r.source_prospect_id),
      [...accepted],
    )
    const totals = yield* stack.step(
      "every delivery delivered",
      eventually(
        deliveryTotals(endpointId),
        (t) => t.deliveries >= accepted.size && t.byStatus.delivered === t.deliveries,
      ),
      { context: () => ({ accepted: accepted.size, received: receiver.received(path).length }) },
    )
    assert.strictEqual(totals.deliveries, accepted.size, "one prospect.ready delivery per prospect")
    assert.sameMembers([...new Set(receiver.received(path).map((r) => prospectOf(r.body)))], [...accepted])
    return { totals, duplicates: assertDuplicatesRecorded(receiver, path, totals) }
  })

/**
 * A burst of `deliveries` events straight into `EVENTS` for one endpoint at a real receiver whose answers take a
 * little while (so many requests are in flight at a fault), once a quarter of them reached the receiver.
 */
export const deliveryBurstUnderWay = (
  stack: FaultStackShape,
  slug: string,
  path: string,
  deliveries: number,
) =>
  Effect.gen(function* () {
    const receiver = yield* startReceiver
    receiver.respond(path, (_, i) => ({ status: 200, delayMs: 5 + (i % 5) * 10 }))
    const acme = yield* owner(slug)
    const sub = yield* subscriber({ ownerId: acme.id })
    const endpointId = yield* endpoint(sub.id, receiver.url(path), ["policy_application.quoted"])
    const payload = examplePayload("policy_application.quoted")
    const events = yield* stack.step(
      `publish ${deliveries} events`,
      Effect.forEach(
        Array.from({ length: deliveries }, (_, i) => i),
        () => publishEvent("policy_application.quoted", acme.slug, payload),
        { concurrency: 50 },
      ),
    )
    const context = () => ({ received: receiver.received(path).length })
    yield* stack.step(
      "a quarter delivered",
      eventually(
        Effect.sync(() => receiver.received(path).length),
        (n) => n >= deliveries / 4,
      ),
      { context },
    )
    return { receiver, endpointId, events, context }
  })

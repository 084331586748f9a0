import { createHash } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import { setTimeout as sleep } from "node:timers/promises"
import { Worker } from "node:worker_threads"
import { type JetStreamClient, jetstream, type PubAck } from "@nats-io/jetstream"
import { connect, headers as natsHeaders } from "@nats-io/transport-node"
import { Effect, Layer, Redacted } from "effect"
import postgres from "postgres"
import { INGEST_BATCH, ingestWorkersLayer } from "../../backend/ingest/Consumer.ts"
import { HEADER_CLIENT, HEADER_RECEIVED_AT, Ingest, INGEST_PARTITIONS } from "../../backend/ingest/Ingest.ts"
import { actorLayer } from "../../backend/platform/Actor.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Db } from "../../backend/platform/Db.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { relayLayer } from "../../backend/platform/Outbox.ts"
import { partitionOf } from "../../backend/platform/Partition.ts"
import { eligibilityActor } from "../../backend/prospects/Consumer.ts"
import { gatewayPort } from "../support/Auth.ts"
import { ingestClient, PROSPECT_UPDATE_MAPPING, prospectUpdate, setMapping } from "../support/Ingest.ts"
import { issueSource, prospectPartner, provisionedOwner } from "../support/Prospects.ts"
import type { LatencyRow } from "./Roster.ts"
import { statementCounter } from "./Statements.ts"
import { natsServerPids, percentile } from "./Probes.ts"
import {
  formatUsage,
  handlerNotes,
  handlerTimer,
  profileSummary,
  publishTimer,
  startProfile,
  summary,
  usageProbe,
} from "./IngestProbes.ts"
import { rawApply } from "./BareApply.ts"

/**
 * The ingestion gateway and the ingest actor at full speed. Run on `prospectService({ ROLES: "partner-api,
 * ingest-api" })` (gateways only); the workers role (outbox relay, eligibility actor, ingest actor) is started
 * by this benchmark, on the same database and prefix, after the first phase:
 *
 *   1. accepted: `BENCH_INGEST_EVENTS` `POST /events` (after `BENCH_INGEST_WARMUP` uncounted ones), each for a
 *      prospect of its own, driven from a worker thread with an undici Pool (`BENCH_INGEST_CONNECTIONS`
 *      keep-alive connections, `BENCH_INGEST_PIPELINING` requests pipelined on each, that many in flight), with
 *      no worker running, so nothing but the gateway competes for the CPU; next to raw `js.publish` (msgID and
 *      the gateway's headers, same bodies) from this process, at the same number in flight and at
 *      `BENCH_INGEST_RAW_INFLIGHT`, and next to a bare node:http gateway (JSON.parse, sha256, js.publish, 202;
 *      once more with the guard's client look-up in Postgres) driven the same way, and a node:http server that only
 *      reads each body and answers 202 (the ceiling of any Node gateway with this driver); then two bare applies of as
 *      many raw messages over 16 partitions: one transaction per event, and up to `BENCH_INGEST_RAW_BATCH` events
 *      of a partition per transaction;
 *   2. applied (drain): the workers start and apply that backlog; the time until `ingest_log` holds an `applied`
 *      row for every event;
 *   3. mixed (unless `BENCH_INGEST_MIXED=0`): as many events again, for new prospects, with the workers running:
 *      accepted/s and latency while applying, and applied/s from the first POST to the last applied row.
 *
 * `BENCH_INGEST_APPLY=0` runs the first phase only. Each phase's notes count the service's SQL statements and round
 * trips per event, by statement (`Statements.ts`).
 *
 * `BENCH_INGEST_CPU_PROFILE=<prefix>` writes V8 CPU profiles of the main thread (`<prefix>-accept.cpuprofile`,
 * `<prefix>-apply.cpuprofile`, `<prefix>-mixed.cpuprofile`) and adds where their time went to the notes.
 * Figures are printed, never asserted; the targets are >= 10,000 accepted/s with p99 <= 50 ms and >= 3,000
 * applied/s.
 */
export const EVENTS = Number(process.env.BENCH_INGEST_EVENTS ?? 20_000)
export const WARMUP = Number(process.env.BENCH_INGEST_WARMUP ?? Math.min(2_000, Math.ceil(EVENTS / 10)))
const CONNECTIONS = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 64)
const PIPELINING = Number(process.env.BENCH_INGEST_PIPELINING ?? 1)
const INFLIGHT = CONNECTIONS * PIPELINING
const RAW_INFLIGHT = Number(process.env.BENCH_INGEST_RAW_INFLIGHT ?? 500)
/** Messages a bare batched apply takes from one partition per transaction. */
const RAW_BATCH = Number(process.env.BENCH_INGEST_RAW_BATCH ?? 100)
const MIXED = process.env.BENCH_INGEST_MIXED !== "0"
/** `0`: only the gateway phase (and its baselines); no workers are started. */
const APPLY = process.env.BENCH_INGEST_APPLY !== "0"
const CPU_PROFILE = process.env.BENCH_INGEST_CPU_PROFILE
/** Applying gives up when the applied count has not moved for this long. */
const STALL_MS = 30_000
const POLL_MS = 50

export const SOURCE = "bench"
const EVENT_TYPE = "ProspectUpdate"

const perSecond = (n: number) => `${Math.round(n).toLocaleString("en-US")}/s`

/** An event body as a partner sends it, for prospect `id`. */
const eventBody = (id: string, updatedAt: string) =>
  JSON.stringify({ source: SOURCE, event_type: EVENT_TYPE, payload: prospectUpdate(id, updatedAt) })

/** `count` event bodies for prospects `<tag>-0` ... of their own, their event times one millisecond apart. */
export const eventBodies = (tag: string, count: number) => {
  const base = Date.UTC(2026, 0, 1)
  return Array.from({ length: count }, (_, i) => eventBody(`${tag}-${i}`, new Date(base + i).toISOString()))
}

// ---------------------------------------------------------------------------------------------------------------
// The load generator: a worker thread of its own, so its CPU does not count against the gateway's event loop.

interface DriveResult {
  readonly seconds: number
  readonly latencies: Float64Array
  readonly statuses: Record<string, number>
  readonly firstError?: string
}

const DRIVER = `
const { parentPort, workerData } = require("node:worker_threads")
const { Pool } = require("undici")
const { token, connections, pipelining, inflight } = workerData
const headers = { authorization: "Bearer " + token, "content-type": "application/json" }
const pools = new Map()
const poolFor = (port) => {
  if (!pools.has(port)) {
    pools.set(port, new Pool("http://127.0.0.1:" + port, { connections, pipelining, keepAliveTimeout: 60000 }))
  }
  return pools.get(port)
}
const run = async ({ port, bodies }) => {
  const pool = poolFor(port)
  const latencies = new Float64Array(bodies.length)
  const statuses = {}
  let firstError
  let next = 0
  const loop = async () => {
    while (next < bodies.length) {
      const i = next++
      const start = performance.now()
      try {
        const response = await pool.request({ method: "POST", path: "/events", headers, body: bodies[i] })
        const text = await response.body.text()
        latencies[i] = performance.now() - start
        statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1
        if (response.statusCode !== 202 && firstError === undefined) {
          firstError = response.statusCode + " " + text.slice(0, 300)
        }
      } catch (error) {
        latencies[i] = performance.now() - start
        statuses.error = (statuses.error ?? 0) + 1
        if (firstError === undefined) firstError = String(error)
      }
    }
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: inflight }, loop))
  const seconds = (performance.now() - start) / 1000
  return { seconds, latencies, statuses, firstError }
}
parentPort.on("message", (message) => {
  run(message).then(
    (result) => parentPort.postMessage(result, [result.latencies.buffer]),
    (error) => parentPort.postMessage({ fatal: String((error && error.stack) || error) }),
  )
})
`

/**
 * A load generator on a worker thread of its own (one JIT-warm undici Pool for every run), so its CPU does not
 * count against the gateway's event loop; `run` POSTs the bodies, `INFLIGHT` at a time.
 */
export const driver = (token: string) => {
  const worker = new Worker(DRIVER, {
    eval: true,
    workerData: { token, connections: CONNECTIONS, pipelining: PIPELINING, inflight: INFLIGHT },
  })
  worker.unref()
  return {
    run: (port: number, bodies: ReadonlyArray<string>) =>
      new Promise<DriveResult>((resolve, reject) => {
        const onError = (error: Error) => reject(error)
        worker.once("error", onError)
        worker.once("message", (message: DriveResult & { fatal?: string }) => {
          worker.off("error", onError)
          if (message.fatal !== undefined) reject(new Error(`load generator failed: ${message.fatal}`))
          else resolve(message)
        })
        worker.postMessage({ port, bodies })
      }),
    close: () => worker.terminate().then(() => undefined),
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw JetStream baseline: the same bodies, msgIDs and headers, on a stream configured like INGEST.

const rawPublish = async (
  js: JetStreamClient,
  subject: (partition: number) => string,
  bodies: ReadonlyArray<Uint8Array>,
  inflight: number,
  tag: string,
) => {
  const latencies = new Float64Array(bodies.length)
  let next = 0
  const loop = async () => {
    while (next < bodies.length) {
      const i = next++
      const h = natsHeaders()
      h.set(HEADER_RECEIVED_AT, new Date().toISOString())
      h.set(HEADER_CLIENT, "cli_raw")
      const start = performance.now()
      const ack: PubAck = await js.publish(subject(i % INGEST_PARTITIONS), bodies[i]!, {
        msgID: `raw-${tag}-${i}`,
        headers: h,
        timeout: 5000,
      })
      if (ack.duplicate) throw new Error(`raw publish ${i} was a duplicate`)
      latencies[i] = performance.now() - start
    }
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: inflight }, loop))
  return { seconds: (performance.now() - start) / 1000, latencies }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP baselines: node:http, JSON.parse, sha256 of the body, js.publish with msgID and headers, 202; with
// `lookup`, also the guard's one client look-up in Postgres per request.

const rawGateway = async (
  js: JetStreamClient,
  subject: (partition: number) => string,
  lookup: postgres.Sql | undefined,
  clientId: string,
) => {
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const bytes = Buffer.concat(chunks)
    const event = JSON.parse(bytes.toString("utf8")) as { source: string; payload: { id: string } }
    if (lookup !== undefined) {
      const [client] =
        await lookup`select gateway, scopes, source, revoked_at from clients where id = ${clientId}`
      if (client === undefined || client.source !== event.source) throw new Error("unknown client")
    }
    const id = createHash("sha256").update(bytes).digest("hex")
    const h = natsHeaders()
    h.set(HEADER_RECEIVED_AT, new Date().toISOString())
    h.set(HEADER_CLIENT, clientId)
    await js.publish(subject(partitionOf(`${event.source}/${event.payload.id}`, INGEST_PARTITIONS)), bytes, {
      msgID: `${lookup === undefined ? "raw" : "rawpg"}-${id}`,
      headers: h,
    })
    const body = JSON.stringify({ status_code: 202, event_id: id })
    response.writeHead(202, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    response.end(body)
  }
  return listening(
    createServer((request, response) => {
      handle(request, response).catch((error: unknown) => {
        response.writeHead(503).end(String(error))
      })
    }),
  )
}

/** The ceiling of any node:http gateway with this driver on this machine: read the body, answer 202, nothing else. */
const nullGateway = () =>
  listening(
    createServer((request, response) => {
      request.resume()
      request.once("end", () => {
        response.writeHead(202, { "content-type": "application/json", "content-length": 2 })
        response.end("{}")
      })
    }),
  )

const listening = async (server: Server) => {
  server.keepAliveTimeout = 65_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

// ---------------------------------------------------------------------------------------------------------------

const outcomes = (admin: postgres.Sql) =>
  admin<Array<{ outcome: string; n: number; reason: string | null }>>`
    select outcome, count(*)::int as n, min(reason) as reason from ingest_log group by outcome order by outcome`

/**
 * Polls until `ingest_log` has `target` applied rows or stops moving for `STALL_MS`; when the last one was
 * written (start of its transaction, from Postgres), on the `performance.now()` scale.
 */
const awaitApplied = async (admin: postgres.Sql, target: number) => {
  let seen = -1
  let movedAt = performance.now()
  for (;;) {
    const [row] = await admin<Array<{ n: number; last: number | null }>>`
      select count(*)::int as n, extract(epoch from max(created_at))::float8 * 1000 as last
      from ingest_log where outcome = 'applied'`
    const n = row!.n
    if (n >= target) return { applied: n, lastAt: row!.last! - performance.timeOrigin, complete: true }
    if (n !== seen) {
      seen = n
      movedAt = performance.now()
    } else if (performance.now() - movedAt > STALL_MS) {
      return { applied: n, lastAt: (row!.last ?? 0) - performance.timeOrigin, complete: false }
    }
    await sleep(POLL_MS)
  }
}

interface ThroughputRow {
  readonly name: string
  readonly ours: number
  readonly baseline: number
  readonly unit: string
  readonly baselineName: string
}

export const statusNote = (result: DriveResult) =>
  `answers ${Object.entries(result.statuses)
    .map(([status, n]) => `${status}: ${n}`)
    .join(", ")}${result.firstError === undefined ? "" : `; first non-202: ${result.firstError}`}`

export const ingestThroughput = Effect.gen(function* () {
  const config = yield* AppConfig
  const nats = yield* Nats
  const natsClient = yield* NatsClient
  const ingest = yield* Ingest
  const db = yield* Db
  const partner = yield* prospectPartner()
  yield* issueSource({ code: SOURCE, clients: [partner.clientId] })
  const slug = yield* provisionedOwner(partner, "org-ingest-bench")
  const client = yield* ingestClient(SOURCE, [slug])
  yield* setMapping(SOURCE, PROSPECT_UPDATE_MAPPING)
  const port = yield* gatewayPort("ingest-api")
  const load = yield* Effect.acquireRelease(
    Effect.sync(() => driver(client.token)),
    (load) => Effect.promise(load.close),
  )
  const ingestSubjects = nats.subject("ingest.")

  const admin = postgres(Redacted.value(config.databaseUrl), { max: 1, onnotice: () => undefined })
  const rawNc = yield* Effect.promise(() => connect({ servers: config.natsUrl.split(",") }))
  yield* Effect.addFinalizer(() =>
    Effect.promise(async () => {
      await rawNc.close()
      await admin.end({ timeout: 5 })
    }),
  )
  const natsPids = yield* Effect.promise(natsServerPids)
  const notes: Array<string> = []
  const rows: Array<ThroughputRow> = []
  const latencies: Array<LatencyRow> = []
  const setup =
    `${CONNECTIONS} keep-alive connections x ${PIPELINING} pipelined = ${INFLIGHT} in flight, ` +
    `one prospect per event`

  // Phase 1: the gateway alone.
  const accepted = yield* Effect.promise(async () => {
    const warm = await load.run(port, eventBodies("warm", WARMUP))
    if ((warm.statuses["202"] ?? 0) !== WARMUP) throw new Error(`warm-up: ${statusNote(warm)}`)
    const bodies = eventBodies("a", EVENTS)
    const acks = publishTimer(nats, ingestSubjects)
    const queries = statementCounter(db)
    const usage = await usageProbe(admin, natsPids)
    const stopProfile =
      CPU_PROFILE === undefined ? undefined : await startProfile(`${CPU_PROFILE}-accept.cpuprofile`)
    const result = await load.run(port, bodies)
    const profile = await stopProfile?.()
    const figures = await usage(EVENTS)
    acks.stop()
    queries.stop()
    return { result, figures, acks: acks.samples, profile, bodies, queries: queries.notes(EVENTS, "event") }
  })
  const acceptedRate = EVENTS / accepted.result.seconds

  // Raw JetStream publishes of the same bodies, no worker running either.
  const raw = yield* Effect.promise(async () => {
    const jsm = natsClient.jsm
    const ingestStream = await jsm.streams.info(nats.streamName("INGEST"))
    const name = `${nats.streamName("INGEST")}_RAWBENCH`
    const subject = (partition: number) => nats.subject(`rawbench.${SOURCE}.${EVENT_TYPE}.${partition}`)
    await jsm.streams.add({ ...ingestStream.config, name, subjects: [nats.subject("rawbench.>")] })
    const js = jetstream(rawNc)
    const encoder = new TextEncoder()
    const bytes = accepted.bodies.map((body) => encoder.encode(body))
    const lookup = postgres(Redacted.value(config.databaseUrl), { max: 10, onnotice: () => undefined })
    try {
      await rawPublish(js, subject, bytes.slice(0, WARMUP), RAW_INFLIGHT, "warm")
      const same = await rawPublish(js, subject, bytes, INFLIGHT, "same")
      const many = await rawPublish(js, subject, bytes, RAW_INFLIGHT, "many")
      const gateway = async (kind: "bare" | "lookup" | "null") => {
        const server =
          kind === "null"
            ? await nullGateway()
            : await rawGateway(js, subject, kind === "lookup" ? lookup : undefined, client.clientId)
        try {
          await load.run(server.port, eventBodies(`warm-raw${kind}`, WARMUP))
          const usage = await usageProbe(admin, natsPids)
          const result = await load.run(server.port, accepted.bodies)
          return { result, figures: await usage(EVENTS) }
        } finally {
          await server.close()
        }
      }
      const bare = await gateway("bare")
      const barePg = await gateway("lookup")
      const ceiling = await gateway("null")
      const applyTarget = WARMUP + EVENTS
      const url = Redacted.value(config.databaseUrl)
      const probe = () => usageProbe(admin, natsPids)
      const [owner] = await admin<Array<{ id: string }>>`select id from owners where slug = ${slug}`
      const rawOwner = { id: String(owner!.id), slug }
      const single = await rawApply(jsm, js, name, subject, url, rawOwner, applyTarget, 1, probe)
      const batched = await rawApply(jsm, js, name, subject, url, rawOwner, applyTarget, RAW_BATCH, probe)
      return { same, many, gateway: bare, gatewayPg: barePg, ceiling, single, batched }
    } finally {
      await lookup.end({ timeout: 5 })
      await jsm.streams.delete(name)
    }
  })
  const rawRate = EVENTS / raw.many.seconds
  const rawSameRate = EVENTS / raw.same.seconds
  const rawName = `js.publish with msgID + the gateway's headers, same bodies, ${RAW_INFLIGHT} in flight`

  rows.push({
    name: `ingest: POST /events -> 202, ${EVENTS} events, gateway only (no workers), ${setup} (target >= 10,000/s)`,
    ours: acceptedRate,
    baseline: rawRate,
    unit: "events/s",
    baselineName: rawName,
  })
  const rawGatewayRate = EVENTS / raw.gateway.result.seconds
  const rawGatewayPgRate = EVENTS / raw.gatewayPg.result.seconds
  rows.push({
    name: `ingest: the same, next to a bare gateway`,
    ours: acceptedRate,
    baseline: rawGatewayRate,
    unit: "events/s",
    baselineName: "node:http, JSON.parse, sha256, js.publish with msgID, 202; same driver",
  })
  latencies.push({
    name: `ingest: POST /events -> 202 latency, same requests (target p99 <= 50 ms)`,
    p50: percentile(accepted.result.latencies, 50),
    p99: percentile(accepted.result.latencies, 99),
    baselineP50: percentile(raw.same.latencies, 50),
    baselineP99: percentile(raw.same.latencies, 99),
    baselineName: `js.publish ack with msgID, same bodies, ${INFLIGHT} in flight (${perSecond(rawSameRate)})`,
  })
  notes.push(
    `ingest accepted (gateway only): ${perSecond(acceptedRate)} over ${accepted.result.seconds.toFixed(2)} s; ` +
      `latency ${summary(accepted.result.latencies)}; ${statusNote(accepted.result)}`,
    `  JetStream ack inside the gateway (publish -> PubAck): ${summary(accepted.acks)}`,
    `  ${formatUsage(accepted.figures)}`,
    ...(accepted.profile === undefined ? [] : profileSummary(accepted.profile).map((line) => `  ${line}`)),
    ...accepted.queries.map((line) => `  ${line}`),
    `bare gateway (node:http, JSON.parse, sha256, js.publish, 202): ${perSecond(rawGatewayRate)}, latency ` +
      `${summary(raw.gateway.result.latencies)}; ${statusNote(raw.gateway.result)}`,
    `  ${formatUsage(raw.gateway.figures)}`,
    `bare gateway + the guard's client look-up in Postgres per request: ${perSecond(rawGatewayPgRate)}, latency ` +
      `${summary(raw.gatewayPg.result.latencies)}; ${statusNote(raw.gatewayPg.result)}`,
    `  ${formatUsage(raw.gatewayPg.figures)}`,
    `ceiling: node:http reading each body and answering 202, nothing else, same driver: ` +
      `${perSecond(EVENTS / raw.ceiling.result.seconds)}, latency ${summary(raw.ceiling.result.latencies)}; ` +
      `${statusNote(raw.ceiling.result)}`,
    `  ${formatUsage(raw.ceiling.figures)}`,
    `bare apply, one transaction per event (BEGIN, upsert, log insert, outbox insert, COMMIT; ${INGEST_PARTITIONS} partitions, ` +
      `max_ack_pending 1): ${perSecond(raw.single.handled / raw.single.seconds)} (${raw.single.handled} events, ` +
      `${(raw.single.outboxRows / raw.single.handled).toFixed(2)} outbox rows each)`,
    `  ${formatUsage(raw.single.figures)}`,
    `bare apply, up to ${RAW_BATCH} events of a partition per transaction (multi-row upsert, log and outbox inserts): ` +
      `${perSecond(raw.batched.handled / raw.batched.seconds)} (${raw.batched.handled} events in ~` +
      `${raw.batched.transactions} transactions, ${(raw.batched.outboxRows / raw.batched.handled).toFixed(2)} outbox rows each)`,
    `  ${formatUsage(raw.batched.figures)}`,
    `raw js.publish: ${perSecond(rawRate)} at ${RAW_INFLIGHT} in flight (ack ${summary(raw.many.latencies)}); ` +
      `${perSecond(rawSameRate)} at ${INFLIGHT} in flight (ack ${summary(raw.same.latencies)})`,
  )

  // Phases 2 and 3: the workers role on the same database and prefix.
  yield* Effect.scoped(
    Effect.gen(function* () {
      if (!APPLY) return
      const total = WARMUP + EVENTS
      const handler = handlerTimer(ingest)
      const drainQueries = statementCounter(db)
      const drainUsage = yield* Effect.promise(() => usageProbe(admin, natsPids))
      const stopDrainProfile =
        CPU_PROFILE === undefined
          ? undefined
          : yield* Effect.promise(() => startProfile(`${CPU_PROFILE}-apply.cpuprofile`))
      const start = performance.now()
      yield* Layer.build(Layer.mergeAll(relayLayer(), actorLayer(eligibilityActor), ingestWorkersLayer))
      const started = performance.now()
      const drained = yield* Effect.promise(() => awaitApplied(admin, total))
      const drainProfile = yield* Effect.promise(async () => stopDrainProfile?.())
      const drainFigures = yield* Effect.promise(() => drainUsage(total))
      handler.stop()
      drainQueries.stop()
      const drainSeconds = (drained.lastAt - start) / 1000
      const appliedRate = drained.applied / drainSeconds
      rows.push(
        {
          name:
            `ingest: applied end to end, draining a backlog of ${total} events (${INGEST_PARTITIONS} partitions, ` +
            `batches of up to ${INGEST_BATCH}, one process leading each), workers only (target >= 3,000/s)`,
          ours: appliedRate,
          baseline: rawRate,
          unit: "events/s",
          baselineName: rawName,
        },
        {
          name: `ingest: the same, next to a bare apply`,
          ours: appliedRate,
          baseline: raw.single.handled / raw.single.seconds,
          unit: "events/s",
          baselineName: `${INGEST_PARTITIONS} pull consumers, one transaction per event: BEGIN, upsert, log, outbox, COMMIT`,
        },
        {
          name: `ingest applied vs the bare durable apply (the same 41-column row, log row and two outbox rows per event)`,
          ours: appliedRate,
          baseline: raw.batched.handled / raw.batched.seconds,
          unit: "events/s",
          baselineName: `${INGEST_PARTITIONS} pull consumers, up to ${RAW_BATCH} events of a partition per transaction`,
        },
      )
      notes.push(
        `ingest applied (drain): ${drained.applied} of ${total} applied in ${drainSeconds.toFixed(2)} s from ` +
          `starting the workers (${((started - start) / 1000).toFixed(2)} s of it to start them), ` +
          `${perSecond(appliedRate)}${drained.complete ? "" : ` - STALLED, outcomes: ${JSON.stringify(yield* Effect.promise(() => outcomes(admin)))}`}`,
        ...handlerNotes(handler.spans, drainFigures.wallMs).map((line) => `  ${line}`),
        `  ${formatUsage(drainFigures)}`,
        ...(drainProfile === undefined ? [] : profileSummary(drainProfile).map((line) => `  ${line}`)),
        ...drainQueries.notes(total, "event").map((line) => `  ${line}`),
      )
      // What an event keeps on disk, for the capacity model's storage (indexes and TOAST included).
      const [stored] = yield* Effect.promise(
        () => admin<Array<{ log: number; prospect: number }>>`
          select pg_total_relation_size('ingest_log')::float8 / greatest(1, (select count(*) from ingest_log)) as log,
                 pg_total_relation_size('prospects')::float8 / greatest(1, (select count(*) from prospects))
                   as prospect`,
      )
      const stream = yield* Effect.promise(() => natsClient.jsm.streams.info(nats.streamName("INGEST")))
      notes.push(
        `  stored per event: ingest log ${Math.round(stored!.log)} B a row, prospects ${Math.round(stored!.prospect)} B ` +
          `a row, INGEST ${Math.round(stream.state.bytes / Math.max(1, stream.state.messages))} B a message`,
      )

      if (!MIXED) return
      const mixed = yield* Effect.promise(async () => {
        const bodies = eventBodies("m", EVENTS)
        const handler = handlerTimer(ingest)
        const acks = publishTimer(nats, ingestSubjects)
        const queries = statementCounter(db)
        const usage = await usageProbe(admin, natsPids)
        const stopProfile =
          CPU_PROFILE === undefined ? undefined : await startProfile(`${CPU_PROFILE}-mixed.cpuprofile`)
        const start = performance.now()
        const result = await load.run(port, bodies)
        const applied = await awaitApplied(admin, total + EVENTS)
        const profile = await stopProfile?.()
        const figures = await usage(EVENTS)
        acks.stop()
        handler.stop()
        queries.stop()
        const spans = handler.spans
        return {
          result,
          applied,
          start,
          figures,
          acks: acks.samples,
          spans,
          profile,
          queries: queries.notes(EVENTS, "event"),
        }
      })
      const mixedAccepted = EVENTS / mixed.result.seconds
      const mixedSeconds = (mixed.applied.lastAt - mixed.start) / 1000
      const mixedApplied = (mixed.applied.applied - total) / mixedSeconds
      rows.push(
        {
          name: `ingest mixed: POST /events -> 202 with the workers applying, ${EVENTS} new prospects, ${setup}`,
          ours: mixedAccepted,
          baseline: rawRate,
          unit: "events/s",
          baselineName: rawName,
        },
        {
          name: `ingest mixed: applied end to end, first POST -> last applied, same events`,
          ours: mixedApplied,
          baseline: rawRate,
          unit: "events/s",
          baselineName: rawName,
        },
      )
      latencies.push({
        name: `ingest mixed: POST /events -> 202 latency with the workers applying`,
        p50: percentile(mixed.result.latencies, 50),
        p99: percentile(mixed.result.latencies, 99),
        baselineP50: percentile(raw.same.latencies, 50),
        baselineP99: percentile(raw.same.latencies, 99),
        baselineName: `js.publish ack with msgID, same bodies, ${INFLIGHT} in flight, no workers`,
      })
      notes.push(
        `ingest mixed: accepted ${perSecond(mixedAccepted)} over ${mixed.result.seconds.toFixed(2)} s, latency ` +
          `${summary(mixed.result.latencies)}; ${statusNote(mixed.result)}; applied ` +
          `${mixed.applied.applied - total} of ${EVENTS} by ${mixedSeconds.toFixed(2)} s after the first POST ` +
          `(${perSecond(mixedApplied)})${mixed.applied.complete ? "" : " - STALLED"}`,
        `  JetStream ack inside the gateway: ${summary(mixed.acks)}`,
        ...handlerNotes(mixed.spans, mixed.figures.wallMs).map((line) => `  ${line}`),
        `  ${formatUsage(mixed.figures)} (per event: one accepted and one applied)`,
        ...(mixed.profile === undefined ? [] : profileSummary(mixed.profile).map((line) => `  ${line}`)),
        ...mixed.queries.map((line) => `  ${line}`),
      )
    }),
  )
  const final = yield* Effect.promise(() => outcomes(admin))
  notes.push(
    `ingest_log outcomes: ${final.map((r) => `${r.outcome} ${r.n}${r.reason === null ? "" : ` (e.g. ${r.reason})`}`).join(", ")}`,
  )
  return { rows, latencies, notes }
}).pipe(Effect.scoped)

import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { setTimeout as sleep } from "node:timers/promises"
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
} from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { Effect, Redacted } from "effect"
import postgres from "postgres"
import { Pool } from "undici"
import { AppConfig } from "../../backend/platform/Config.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { gatewayPort } from "../support/Auth.ts"
import { natsUrl } from "../support/TestPlatform.ts"
import { completeProspect, issueSource, prospectPartner, provisionedOwner } from "../support/Prospects.ts"
import type { LatencyRow } from "./Roster.ts"
import { countSocketWrites, cpuProfile, machineCpu, natsServerPids, percentile, statCpu } from "./Probes.ts"

/**
 * POST -> `prospect.ready` latency of new complete prospects sent at a steady rate, next to the same round trip
 * built from the bare parts (node:http, one INSERT, js.publish with msgID, a durable pull consumer that UPDATEs
 * the row and publishes "ready"). `BENCH_PROSPECTS` requests (default 20 s worth) at `BENCH_PROSPECT_RATE` per
 * second (default 50), after `BENCH_PROSPECT_WARMUP` uncounted ones (default 40). Figures are printed, never
 * asserted; the targets are p50 <= 25 ms and p99 <= 150 ms.
 */
const RATE = Number(process.env.BENCH_PROSPECT_RATE ?? 50)
const COUNT = Number(process.env.BENCH_PROSPECTS ?? RATE * 20)
const WARMUP = Number(process.env.BENCH_PROSPECT_WARMUP ?? 40)
/** A file to write a V8 CPU profile of our measured phase to (open it in Chrome DevTools); none when unset. */
const CPU_PROFILE = process.env.BENCH_PROSPECT_CPU_PROFILE
const NATS_PORT = Number(new URL(natsUrl).port || 4222)
/** How long to wait for the last `ready` after the last POST before giving up on the missing ones. */
const SETTLE_MS = 30_000

const encoder = new TextEncoder()
const decoder = new TextDecoder()

interface Timing {
  sent: number
  answered?: number
  /** When the eligibility request (ours) reached NATS; unused by the baseline. */
  requested?: number
  ready?: number
}

const summary = (samples: ReadonlyArray<number>) =>
  `p50 ${percentile(samples, 50).toFixed(1)} / p90 ${percentile(samples, 90).toFixed(1)} / p99 ${percentile(samples, 99).toFixed(1)} / max ${Math.max(...samples).toFixed(1)} ms`

/** CPU time (ms) of a process from /proc, or 0 when it is gone or unreadable. */
const processCpu = (pid: number) => statCpu(`/proc/${pid}/stat`)

/**
 * Where CPU goes during a measured phase: this process (service or raw server, plus the load generator), the
 * Postgres backends of the benchmark's database, nats-server, and everything else on the machine (other
 * processes compete for the same 2 cores); transactions committed in the database; socket writes this process
 * makes to Postgres and NATS (postgres.js coalesces what is queued in one tick into one write, so Postgres
 * writes are about round trips); event-loop delay.
 */
const usageProbe = async (admin: postgres.Sql, natsPids: ReadonlyArray<number>, natsPort: number) => {
  const backends = (
    await admin<Array<{ pid: number }>>`
      select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
  ).map((r) => r.pid)
  const snap = async () => ({
    wall: performance.now(),
    self: process.cpuUsage(),
    pg: (await Promise.all(backends.map(processCpu))).reduce((a, b) => a + b, 0),
    nats: (await Promise.all(natsPids.map(processCpu))).reduce((a, b) => a + b, 0),
    machine: await machineCpu(),
    commits: Number(
      (
        await admin<Array<{ n: string }>>`
          select xact_commit as n from pg_stat_database where datname = current_database()`
      )[0]!.n,
    ),
  })
  const loop = monitorEventLoopDelay({ resolution: 1 })
  loop.enable()
  const stopCounting = countSocketWrites({ pg: admin.options.port[0] ?? 5432, nats: natsPort })
  const before = await snap()
  return async (count: number) => {
    const after = await snap()
    loop.disable()
    const writes = stopCounting()
    const self = process.cpuUsage(before.self)
    const wall = after.wall - before.wall
    const busy = after.machine.busy - before.machine.busy
    const node = (self.user + self.system) / 1000
    const pg = after.pg - before.pg
    const nats = after.nats - before.nats
    const cores = (after.machine.total - before.machine.total) / wall
    return (
      `CPU per prospect: node ${(node / count).toFixed(2)} ms, its postgres backends ${(pg / count).toFixed(2)} ms, ` +
      `nats-server ${(nats / count).toFixed(2)} ms; machine ${((100 * busy) / (wall * cores)).toFixed(0)}% busy ` +
      `over ${cores.toFixed(0)} cores, other processes ${Math.max(0, (100 * (busy - node - pg - nats)) / (wall * cores)).toFixed(0)}%; ` +
      `~${((after.commits - before.commits) / count).toFixed(1)} commits per prospect (pg_stat_database, lags ~1 s); ` +
      `socket writes per prospect: ${(writes.pg / count).toFixed(1)} to postgres, ${(writes.nats / count).toFixed(1)} to nats; ` +
      `event-loop delay (1 ms timer) p50 ${(loop.percentile(50) / 1e6).toFixed(1)} / ` +
      `p99 ${(loop.percentile(99) / 1e6).toFixed(1)} / max ${(loop.max / 1e6).toFixed(1)} ms`
    )
  }
}

/** Who is being measured: sends one POST for `id` and records its answer in `timings`. */
interface Target {
  readonly timings: Map<string, Timing>
  readonly post: (id: string) => Promise<void>
}

/**
 * Sends one POST per id at `rate` per second on an open loop (a slow answer does not delay the next send), then
 * waits until every one of them has its `ready`; the timings of those ids.
 */
const paced = async (target: Target, ids: ReadonlyArray<string>, rate: number) => {
  const interval = 1000 / rate
  const start = performance.now()
  const posts: Array<Promise<void>> = []
  for (const [i, id] of ids.entries()) {
    const wait = start + i * interval - performance.now()
    if (wait > 1) await sleep(wait)
    target.timings.set(id, { sent: performance.now() })
    posts.push(target.post(id))
  }
  await Promise.all(posts)
  const deadline = performance.now() + SETTLE_MS
  while (ids.some((id) => target.timings.get(id)?.ready === undefined)) {
    if (performance.now() > deadline) {
      const missing = ids.filter((id) => target.timings.get(id)?.ready === undefined)
      throw new Error(`${missing.length} of ${ids.length} never became ready (first: ${missing[0]})`)
    }
    await sleep(5)
  }
  return ids.map((id) => target.timings.get(id)!)
}

/** Warm-up, then the measured requests with the usage probe (and, for ours, the optional CPU profile) around them. */
const run = async (target: Target, tag: string, admin: postgres.Sql, profile?: string) => {
  await paced(
    target,
    Array.from({ length: WARMUP }, (_, i) => `warm-${tag}-${i}`),
    RATE,
  )
  const usage = await usageProbe(admin, await natsServerPids(), NATS_PORT)
  const stopProfile = profile === undefined ? undefined : await cpuProfile(profile, 200)
  const timings = await paced(
    target,
    Array.from({ length: COUNT }, (_, i) => `bench-${tag}-${i}`),
    RATE,
  )
  const figures = await usage(COUNT)
  await stopProfile?.()
  return { timings, usage: figures }
}

const answerTimer =
  (pool: Pool, timings: Map<string, Timing>) =>
  async (path: string, id: string, body: string, token?: string) => {
    const response = await pool.request({
      method: "POST",
      path,
      headers: {
        "content-type": "application/json",
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      body,
    })
    const text = await response.body.text()
    timings.get(id)!.answered = performance.now()
    const answer = JSON.parse(text) as { status_code?: number; prospect?: { status?: string } }
    if (
      response.statusCode !== 200 ||
      answer.status_code !== 201 ||
      answer.prospect?.status !== "processing"
    ) {
      throw new Error(`POST ${path} for ${id} answered ${response.statusCode}: ${text.slice(0, 300)}`)
    }
  }

/** Follows `subject` on `stream` from now on with an ordered consumer; `onMessage` gets each payload. */
const follow = async (
  js: JetStreamClient,
  stream: string,
  subject: string,
  onMessage: (json: unknown) => void,
) => {
  const consumer = await js.consumers.get(stream, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.New,
  })
  const messages = await consumer.consume()
  const done = (async () => {
    for await (const msg of messages) onMessage(JSON.parse(decoder.decode(msg.data)))
  })()
  return async () => {
    await messages.close()
    await done
  }
}

interface Measured {
  readonly total: ReadonlyArray<number>
  readonly answered: ReadonlyArray<number>
  readonly usage: string
}

const measured = (timings: ReadonlyArray<Timing>, usage: string): Measured => ({
  total: timings.map((t) => t.ready! - t.sent),
  answered: timings.map((t) => t.answered! - t.sent),
  usage,
})

/** Epoch milliseconds (as Postgres timestamps give them) on the `performance.now()` scale. */
const fromEpoch = (epochMs: number) => epochMs - performance.timeOrigin

/**
 * Where the time of each of our prospects went, from the client's timestamps, the core subscription to the
 * eligibility request, and the outbox rows (`created_at` is the start of the enqueuing transaction, `sent_at`
 * the start of the relay transaction that published it).
 */
const stages = async (admin: postgres.Sql, timings: Map<string, Timing>, ids: ReadonlyArray<string>) => {
  // The relay publishes before its transaction commits: wait for the last `sent_at` to be visible.
  for (let tries = 0; tries < 100; tries++) {
    const [pending] = await admin<
      Array<{ n: number }>
    >`select count(*)::int as n from outbox where sent_at is null`
    if (pending!.n === 0) break
    await sleep(20)
  }
  const rows = await admin<Array<{ id: string; kind: string; created: number; sent: number }>>`
    select convert_from(payload, 'UTF8')::jsonb #>> case when subject like 'eligibility.%'
             then '{source_prospect_id}'::text[] else '{data,third_party_prospect,source_prospect_id}' end as id,
           case when subject like 'eligibility.%' then 'requested' else 'ready' end as kind,
           extract(epoch from created_at)::float8 * 1000 as created, extract(epoch from sent_at)::float8 * 1000 as sent
    from outbox
    where sent_at is not null and (subject like 'eligibility.requested.%' or subject like 'events.%.prospect.ready')`
  const outbox = new Map<string, { created: number; sent: number }>()
  for (const row of rows) {
    outbox.set(`${row.kind}:${row.id}`, { created: fromEpoch(row.created), sent: fromEpoch(row.sent) })
  }
  const stage = (
    from: (t: Timing, id: string) => number | undefined,
    to: (t: Timing, id: string) => number | undefined,
  ) =>
    ids.flatMap((id) => {
      const t = timings.get(id)!
      const a = from(t, id)
      const b = to(t, id)
      return a === undefined || b === undefined ? [] : [b - a]
    })
  const upsertStart = (_t: Timing, id: string) => outbox.get(`requested:${id}`)?.created
  const relay1 = (_t: Timing, id: string) => outbox.get(`requested:${id}`)?.sent
  const decideStart = (_t: Timing, id: string) => outbox.get(`ready:${id}`)?.created
  const relay2 = (_t: Timing, id: string) => outbox.get(`ready:${id}`)?.sent
  const since = new Date(performance.timeOrigin + timings.get(ids[0]!)!.sent)
  const [relay] = await admin<Array<{ rows: number; passes: number }>>`
    select count(*)::int as rows, count(distinct sent_at)::int as passes from outbox where created_at >= ${since}`
  const relayNote =
    `outbox: ${(relay!.rows / ids.length).toFixed(1)} rows per prospect, published by ` +
    `${(relay!.passes / ids.length).toFixed(1)} relay transactions per prospect that published rows`
  const byPartition = await admin<Array<{ partition: number; p50: number; p99: number }>>`
    select partition,
           percentile_cont(0.5) within group (order by extract(epoch from sent_at - created_at) * 1000) as p50,
           percentile_cont(0.99) within group (order by extract(epoch from sent_at - created_at) * 1000) as p99
    from outbox where created_at >= ${since} and sent_at is not null group by partition order by partition`
  const partitionNote =
    `outbox relay delay (relay transaction start - enqueuing transaction start) p50/p99 ms by partition: ` +
    byPartition.map((r) => `${r.partition}: ${r.p50.toFixed(0)}/${r.p99.toFixed(0)}`).join(", ")
  const list = [
    [
      "POST sent -> upsert transaction begins (HTTP, JWT guard, validation, source checks)",
      stage((t) => t.sent, upsertStart),
    ],
    ["upsert transaction begins -> HTTP answer received", stage(upsertStart, (t) => t.answered)],
    [
      "upsert transaction begins -> relay transaction begins (upsert, commit, NOTIFY wake-up)",
      stage(upsertStart, relay1),
    ],
    ["relay transaction begins -> eligibility.requested seen on NATS", stage(relay1, (t) => t.requested)],
    [
      "eligibility.requested seen -> decide transaction begins (actor delivery)",
      stage((t) => t.requested, decideStart),
    ],
    [
      "decide transaction begins -> relay transaction begins (decide, commit, NOTIFY wake-up)",
      stage(decideStart, relay2),
    ],
    ["relay transaction begins -> prospect.ready received from EVENTS", stage(relay2, (t) => t.ready)],
  ] as const
  return { list, relayNote, partitionNote }
}

/** Ours: the partner gateway and the workers of `prospectService()`, over real HTTP and the EVENTS stream. */
const ours = Effect.gen(function* () {
  const nats = yield* Nats
  const config = yield* AppConfig
  const partner = yield* prospectPartner()
  yield* issueSource({ code: "bench", clients: [partner.clientId] })
  const slug = yield* provisionedOwner(partner, "org-bench")
  const port = yield* gatewayPort("partner-api")

  return yield* Effect.promise(async () => {
    const admin = postgres(Redacted.value(config.databaseUrl), { max: 1, onnotice: () => undefined })
    const nc = await connect({ servers: config.natsUrl.split(",") })
    const js = jetstream(nc)
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 16, pipelining: 1 })
    const timings = new Map<string, Timing>()
    const stopReady = await follow(
      js,
      nats.streamName("EVENTS"),
      nats.subject(`events.${slug}.prospect.ready`),
      (json) => {
        const id = (json as { data: { third_party_prospect: { source_prospect_id: string } } }).data
          .third_party_prospect.source_prospect_id
        const timing = timings.get(id)
        if (timing !== undefined && timing.ready === undefined) timing.ready = performance.now()
      },
    )
    // A core subscription: when the outbox relay published the eligibility request, for the breakdown.
    const requested = nc.subscribe(nats.subject(`eligibility.requested.${slug}.*`), {
      callback: (_error, msg) => {
        const timing = timings.get((msg.json() as { source_prospect_id: string }).source_prospect_id)
        if (timing !== undefined && timing.requested === undefined) timing.requested = performance.now()
      },
    })
    await nc.flush()
    const post = answerTimer(pool, timings)
    try {
      const done = await run(
        {
          timings,
          post: (id) =>
            post(
              `/partners/${slug}/prospects`,
              id,
              JSON.stringify({ prospect: completeProspect("bench", id) }),
              partner.token,
            ),
        },
        "ours",
        admin,
        CPU_PROFILE,
      )
      const ids = Array.from({ length: COUNT }, (_, i) => `bench-ours-${i}`)
      return { ...measured(done.timings, done.usage), stages: await stages(admin, timings, ids) }
    } finally {
      requested.unsubscribe()
      await stopReady()
      await pool.close()
      await nc.close()
      await admin.end({ timeout: 5 })
    }
  })
})

const RAW_TABLE = "bench_prospect_raw"

/** The raw round trip's moving parts, on connections of their own. */
const rawServer = async (databaseUrl: string, nc: NatsConnection, prefix: string) => {
  const sql = postgres(databaseUrl, { max: 10, onnotice: () => undefined })
  const js = jetstream(nc)
  const jsm = await jetstreamManager(nc)
  const stream = `${prefix.toUpperCase()}_BENCHRAW`
  const subject = (name: string) => `${prefix}.benchraw.${name}`
  await sql`create table ${sql(RAW_TABLE)} (
    id text primary key, body jsonb not null, status text not null, created_at timestamptz not null default now(),
    decided_at timestamptz)`
  await jsm.streams.add({ name: stream, subjects: [subject(">")], duplicate_window: 120 * 1e9 })
  await jsm.consumers.add(stream, {
    durable_name: "raw",
    ack_policy: AckPolicy.Explicit,
    filter_subject: subject("requested"),
    max_ack_pending: 1000,
  })

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const prospect = (
      JSON.parse(Buffer.concat(chunks).toString("utf8")) as { prospect: Record<string, unknown> }
    ).prospect
    const id = String(prospect.source_prospect_id)
    await sql`insert into ${sql(RAW_TABLE)} (id, body, status) values (${id}, ${sql.json(prospect as postgres.JSONValue)}, 'processing')`
    await js.publish(subject("requested"), encoder.encode(JSON.stringify({ source_prospect_id: id })), {
      msgID: `requested:${id}`,
    })
    response.writeHead(200, { "content-type": "application/json" })
    response.end(JSON.stringify({ status_code: 201, prospect: { ...prospect, status: "processing" } }))
  }
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.writeHead(500).end(String(error))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))

  const messages = await (await js.consumers.get(stream, "raw")).consume({ max_messages: 64 })
  const worker = (async () => {
    for await (const msg of messages) {
      const { source_prospect_id: id } = JSON.parse(decoder.decode(msg.data)) as {
        source_prospect_id: string
      }
      await sql`update ${sql(RAW_TABLE)} set status = 'ready', decided_at = now() where id = ${id}`
      await js.publish(subject("ready"), encoder.encode(JSON.stringify({ source_prospect_id: id })), {
        msgID: `ready:${id}`,
      })
      msg.ack()
    }
  })()

  return {
    port: (server.address() as AddressInfo).port,
    stream,
    readySubject: subject("ready"),
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await messages.close()
      await worker
      await sql`drop table if exists ${sql(RAW_TABLE)}`
      await sql.end({ timeout: 5 })
      await jsm.streams.delete(stream)
    },
  }
}

/** The baseline: the same POSTs, rate and observation, against the bare parts. */
const baseline = Effect.gen(function* () {
  const config = yield* AppConfig
  const nats = yield* Nats
  return yield* Effect.promise(async () => {
    const admin = postgres(Redacted.value(config.databaseUrl), { max: 1, onnotice: () => undefined })
    const serverNc = await connect({ servers: config.natsUrl.split(",") })
    const clientNc = await connect({ servers: config.natsUrl.split(",") })
    const raw = await rawServer(Redacted.value(config.databaseUrl), serverNc, nats.prefix)
    const pool = new Pool(`http://127.0.0.1:${raw.port}`, { connections: 16, pipelining: 1 })
    const timings = new Map<string, Timing>()
    const stopReady = await follow(jetstream(clientNc), raw.stream, raw.readySubject, (json) => {
      const timing = timings.get((json as { source_prospect_id: string }).source_prospect_id)
      if (timing !== undefined && timing.ready === undefined) timing.ready = performance.now()
    })
    const post = answerTimer(pool, timings)
    try {
      const done = await run(
        {
          timings,
          post: (id) => post("/prospects", id, JSON.stringify({ prospect: completeProspect("bench", id) })),
        },
        "raw",
        admin,
      )
      return measured(done.timings, done.usage)
    } finally {
      await stopReady()
      await pool.close()
      await raw.close()
      await clientNc.close()
      await serverNc.close()
      await admin.end({ timeout: 5 })
    }
  })
})

/**
 * Rows for the latency table (POST -> `prospect.ready`, and POST -> answer), plus notes: where our time goes,
 * stage by stage, and CPU, commits and event-loop delay of both sides.
 */
export const prospectReadyLatency = Effect.gen(function* () {
  const ourFigures = yield* ours
  const baseFigures = yield* baseline
  const rate = `${COUNT} new complete prospects at ${RATE}/s`
  const rows: Array<LatencyRow> = [
    {
      name: `prospects: POST -> prospect.ready on EVENTS, ${rate} (target p50 <= 25 ms, p99 <= 150 ms)`,
      p50: percentile(ourFigures.total, 50),
      p99: percentile(ourFigures.total, 99),
      baselineP50: percentile(baseFigures.total, 50),
      baselineP99: percentile(baseFigures.total, 99),
      baselineName:
        'node:http INSERT + js.publish(msgID) -> durable pull consumer UPDATE + publish "ready", same rate',
    },
    {
      name: `prospects: POST -> HTTP answer, same requests`,
      p50: percentile(ourFigures.answered, 50),
      p99: percentile(ourFigures.answered, 99),
      baselineP50: percentile(baseFigures.answered, 50),
      baselineP99: percentile(baseFigures.answered, 99),
      baselineName: "node:http INSERT + js.publish(msgID), then answer",
    },
  ]
  const notes = [
    `prospects, ours: POST -> prospect.ready ${summary(ourFigures.total)}`,
    ...ourFigures.stages.list.map(([name, samples]) => `  ${name}: ${summary(samples)}`),
    `  ${ourFigures.stages.relayNote}`,
    `  ${ourFigures.stages.partitionNote}`,
    `  ${ourFigures.usage}`,
    `prospects, baseline: POST -> ready ${summary(baseFigures.total)}`,
    `  ${baseFigures.usage}`,
  ]
  return { rows, notes }
})

import { AckPolicy } from "@nats-io/jetstream"
import { Context, Effect, Layer } from "effect"
import { Pool } from "undici"
import { Auth } from "../../backend/auth/Auth.ts"
import { authGuard } from "../../backend/auth/Http.ts"
import { AppConfig } from "../../backend/platform/Config.ts"
import { gatewayLayer } from "../../backend/platform/Gateway.ts"
import { json, ListeningPorts, type Route } from "../../backend/platform/Http.ts"
import { actorLayer } from "../../backend/platform/Actor.ts"
import { ack, type ActorDefinition } from "../../backend/platform/ActorDefinition.ts"
import { Db } from "../../backend/platform/Db.ts"
import { Nats } from "../../backend/platform/Nats.ts"
import { NatsClient } from "../../backend/platform/nats/Client.ts"
import { Outbox, relayLayer } from "../../backend/platform/Outbox.ts"
import { partitionedSubject } from "../../backend/platform/Partition.ts"
import { Schema } from "effect"
import { eventually } from "../support/Streams.ts"
import { type LatencyRow, rosterBatches } from "./Roster.ts"
import { gatewayProcessesThroughput } from "./GatewayProcesses.ts"
import { workersProcessesThroughput } from "./WorkersProcesses.ts"
import { ingestThroughput } from "./Ingest.ts"
import { prospectReadyLatency } from "./Prospects.ts"
import { startupLatencies } from "./Startup.ts"
import { webhookBench } from "./Webhooks.ts"
import { retentionBench } from "./Retention.ts"
import { consoleBench } from "./Console.ts"
import { firstLoad } from "./FirstLoad.ts"
import { signInUnderFlood } from "./SignIn.ts"
import { tokenUnderFlood } from "./Token.ts"
import { prospectService } from "../support/Prospects.ts"
import { isolatedEnv, isolationLayer, testPlatform } from "../support/TestPlatform.ts"

interface Row {
  readonly name: string
  readonly ours: number
  readonly baseline: number
  readonly unit: string
  readonly baselineName: string
}

const N = Number(process.env.BENCH_MESSAGES ?? 10_000)

/**
 * `BENCH_ONLY=prospects` (or a comma-separated list of relay, actor, gateway, token, signin, firstload, roster,
 * prospects, ingest, processes, webhooks, workers, retention, console, startup) runs only those benchmarks; unset
 * runs all.
 */
const only = process.env.BENCH_ONLY?.split(",")
  .map((name) => name.trim())
  .filter((name) => name !== "")
const selected = (name: string) => only === undefined || only.length === 0 || only.includes(name)

const PARTITIONS = 16
const encoder = new TextEncoder()
const payload = (i: number) => ({ key: `k${i % 500}`, n: i, body: "x".repeat(200) })

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = performance.now()
    yield* effect
    return (performance.now() - start) / 1000
  })

/** Raw JetStream: N publishes with msgIDs, pipelined 500 at a time. */
const rawPublish = (subject: string) =>
  Effect.gen(function* () {
    const nats = yield* Nats
    const client = yield* NatsClient
    for (let i = 0; i < N; i += 500) {
      yield* Effect.promise(() =>
        Promise.all(
          Array.from({ length: Math.min(500, N - i) }, (_, j) =>
            client.js.publish(nats.subject(subject), encoder.encode(JSON.stringify(payload(i + j))), {
              msgID: `raw-${subject}-${i + j}`,
            }),
          ),
        ),
      )
    }
  })

const outboxRelay = Effect.gen(function* () {
  const db = yield* Db
  const outbox = yield* Outbox
  for (let i = 0; i < N; i += 100) {
    const batch = Array.from({ length: Math.min(100, N - i) }, (_, j) => payload(i + j))
    yield* db.transaction(
      outbox.enqueue(batch.map((p) => ({ subject: `events.bench.relay.${p.key}`, key: p.key, payload: p }))),
    )
  }
  const unsent = db
    .query((sql) => sql<Array<{ n: string }>>`select count(*) as n from outbox where sent_at is null`)
    .pipe(Effect.map(([row]) => Number(row?.n)))
  const ours = yield* Effect.scoped(
    timed(Layer.build(relayLayer({ workers: 4 })).pipe(Effect.andThen(eventually(unsent, (n) => n === 0)))),
  )
  const baseline = yield* timed(rawPublish("events.bench.raw.x"))
  return {
    name: `outbox relay: ${N} committed messages to JetStream`,
    ours: N / ours,
    baseline: N / baseline,
    unit: "msg/s",
    baselineName: "js.publish with msgID, 500 in flight",
  } satisfies Row
})

const Step = Schema.Struct({ key: Schema.String, n: Schema.Number, body: Schema.String })

const actorThroughput = Effect.gen(function* () {
  const nats = yield* Nats
  const client = yield* NatsClient
  for (let i = 0; i < N; i += 500) {
    yield* Effect.promise(() =>
      Promise.all(
        Array.from({ length: Math.min(500, N - i) }, (_, j) => {
          const p = payload(i + j)
          return client.js.publish(
            nats.subject(partitionedSubject("eligibility.bench.actor", p.key, PARTITIONS)),
            encoder.encode(JSON.stringify(p)),
          )
        }),
      ),
    )
  }
  let handled = 0
  /** Seconds for the actor to handle the N messages (each actor reads them all, with a consumer of its own). */
  const run = (actor: Omit<ActorDefinition<typeof Step.Type, never>, "stream" | "schema" | "handle">) => {
    handled = 0
    return Effect.scoped(
      timed(
        Layer.build(
          actorLayer({
            ...actor,
            stream: "ELIGIBILITY",
            schema: Step,
            handle: () => Effect.sync(() => (handled++, ack)),
          }),
        ).pipe(
          Effect.andThen(
            eventually(
              Effect.sync(() => handled),
              (n) => n >= N,
            ),
          ),
        ),
      ),
    )
  }
  const ordered = yield* run({ name: "bench", subject: "eligibility.bench.*", partitions: PARTITIONS })
  // The webhook actors' mode: no partition token, one consumer, many messages in hand.
  const concurrent = yield* run({
    name: "bench_concurrent",
    subject: "eligibility.bench.actor.*",
    partitions: 0,
    concurrency: 512,
  })

  // Baseline: one plain durable consumer, no ordering guarantees, acking as fast as messages arrive.
  const stream = nats.streamName("ELIGIBILITY")
  yield* Effect.promise(() =>
    client.jsm.consumers.add(stream, {
      durable_name: "raw",
      ack_policy: AckPolicy.Explicit,
      filter_subject: nats.subject("eligibility.bench.actor.>"),
    }),
  )
  const baseline = yield* timed(
    Effect.promise(async () => {
      const consumer = await client.js.consumers.get(stream, "raw")
      const messages = await consumer.consume({ max_messages: 1000 })
      let n = 0
      for await (const msg of messages) {
        JSON.parse(new TextDecoder().decode(msg.data))
        msg.ack()
        if (++n === N) break
      }
    }),
  )
  const row = (name: string, seconds: number): Row => ({
    name,
    ours: N / seconds,
    baseline: N / baseline,
    unit: "msg/s",
    baselineName: "consume()+ack on one unordered consumer",
  })
  return [
    row(`actor runtime: ${N} messages over ${PARTITIONS} ordered partitions`, ordered),
    row(`actor runtime: the same ${N} messages, one unpartitioned consumer, 512 in hand`, concurrent),
  ]
})

/** Sends `count` GETs over 8 keep-alive connections, 32 in flight; requests per second. */
const requestsPerSecond = (port: number, path: string, headers: Record<string, string>, count: number) =>
  Effect.promise(async () => {
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 8 })
    let sent = 0
    const worker = async () => {
      while (sent < count) {
        sent++
        const response = await pool.request({ method: "GET", path, headers })
        await response.body.dump()
        if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}`)
      }
    }
    const start = performance.now()
    await Promise.all(Array.from({ length: 32 }, worker))
    const seconds = (performance.now() - start) / 1000
    await pool.close()
    return count / seconds
  })

const REQUESTS = Math.max(1000, Math.floor(N / 2))

/** Token check, client and owner look-ups on every request, next to a route that does none of it. */
const authenticatedRequests = Effect.gen(function* () {
  const db = yield* Db
  const auth = yield* Auth
  const config = yield* AppConfig
  yield* db.query((sql) => sql`insert into owners (slug, name) values ('bench-owner', 'Bench Owner')`)
  const client = yield* auth.createClient({ gateway: "partner", name: "bench", owners: ["bench-owner"] })
  const token = yield* auth.issueToken("partner", {
    grant_type: "client_credentials",
    client_id: client.clientId,
    client_secret: client.clientSecret,
    audience: config.audiences.partner,
  })
  const route: Route<never> = {
    method: "GET",
    path: "/partners/:owner_slug/bench",
    access: { scope: "properties:write" },
    handle: () => Effect.succeed(json(200, { ok: true })),
  }
  return yield* Effect.scoped(
    Effect.gen(function* () {
      const ports = Context.get(
        yield* Layer.build(
          gatewayLayer("partner-api", [route], authGuard("partner")).pipe(
            Layer.provideMerge(ListeningPorts.layer),
          ),
        ),
        ListeningPorts,
      )
      const port = ports.get("partner-api")!
      const ours = yield* requestsPerSecond(
        port,
        "/partners/bench-owner/bench",
        { authorization: `Bearer ${token.access_token}` },
        REQUESTS,
      )
      const baseline = yield* requestsPerSecond(port, "/healthz", {}, REQUESTS)
      return {
        name: `partner gateway: ${REQUESTS} authenticated owner-scoped GETs (JWT, client and owner checked)`,
        ours,
        baseline,
        unit: "req/s",
        baselineName: "GET /healthz on the same server",
      } satisfies Row
    }),
  )
}).pipe(Effect.provide(Auth.layer))

const format = (rows: ReadonlyArray<Row>) =>
  [
    "| benchmark | ours | raw baseline | ours / baseline |",
    "|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${Math.round(r.ours).toLocaleString("en-US")} ${r.unit} | ${Math.round(r.baseline).toLocaleString("en-US")} ${r.unit} (${r.baselineName}) | ${(r.ours / r.baseline).toFixed(2)} |`,
    ),
  ].join("\n")

/** A latency ratio: one decimal, or the first significant digit when below 0.1 (a peer far slower than ours). */
const times = (ratio: number) => `${ratio >= 0.1 ? ratio.toFixed(1) : ratio.toPrecision(1)}x`

const formatLatency = (rows: ReadonlyArray<LatencyRow>) =>
  [
    "| benchmark | ours p50 / p99 | raw baseline p50 / p99 | ours / baseline (p50 / p99) |",
    "|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} ms | ${r.baselineP50.toFixed(1)} / ${r.baselineP99.toFixed(1)} ms (${r.baselineName}) | ${times(r.p50 / r.baselineP50)} / ${times(r.p99 / r.baselineP99)} |`,
    ),
  ].join("\n")

const program = Effect.gen(function* () {
  const rows: Array<Row> = []
  const benches: ReadonlyArray<
    [string, Effect.Effect<Row | ReadonlyArray<Row>, unknown, Db | Nats | NatsClient | Outbox | AppConfig>]
  > = [
    ["relay", outboxRelay],
    ["actor", actorThroughput],
    ["gateway", authenticatedRequests],
  ]
  for (const [name, bench] of benches) {
    if (!selected(name)) continue
    rows.push(
      ...[
        yield* Effect.scoped(
          Layer.build(testPlatform({ PARTNER_API_PORT: "0" }).layer).pipe(
            Effect.flatMap((ctx) => Effect.provide(bench, ctx)),
          ),
        ),
      ].flat(),
    )
  }
  const latencies: Array<LatencyRow> = []
  const notes: Array<string> = []
  if (selected("token")) {
    // The partner gateway alone, hashing secrets at the production cost, on a database of its own.
    const token = yield* Effect.scoped(
      Layer.build(
        isolationLayer(isolatedEnv({ ROLES: "partner-api", PARTNER_API_PORT: "0", SECRET_HASH_COST: "15" })),
      ).pipe(Effect.flatMap((ctx) => Effect.provide(tokenUnderFlood, ctx))),
    )
    latencies.push(...token.rows)
    notes.push(...token.notes)
  }
  if (selected("signin")) {
    // The console and the partner gateway in one process, as `npm start` runs them, hashing at the production cost.
    const signIn = yield* Effect.scoped(
      Layer.build(
        isolationLayer(
          isolatedEnv({
            ROLES: "partner-api,console",
            PARTNER_API_PORT: "0",
            CONSOLE_PORT: "0",
            SECRET_HASH_COST: "15",
          }),
        ),
      ).pipe(Effect.flatMap((ctx) => Effect.provide(signInUnderFlood, ctx))),
    )
    latencies.push(...signIn.rows)
    notes.push(...signIn.notes)
  }
  if (selected("firstload")) {
    // The console alone on a database of its own, opened in chromium.
    const loaded = yield* Effect.scoped(
      Layer.build(
        isolationLayer(isolatedEnv({ ROLES: "console", CONSOLE_PORT: "0", SERVICE_ENV: "development" })),
      ).pipe(Effect.flatMap((ctx) => Effect.provide(firstLoad, ctx))),
    )
    latencies.push(...loaded.rows)
  }
  if (selected("roster")) {
    const roster = yield* Effect.scoped(
      Layer.build(testPlatform({ PARTNER_API_PORT: "0" }).layer).pipe(
        Effect.flatMap((ctx) => Effect.provide(rosterBatches, ctx)),
      ),
    )
    latencies.push(...roster.latencies)
    notes.push(...roster.notes)
  }
  if (selected("prospects")) {
    // The partner gateway and the workers on a database and prefix of their own, dropped afterwards.
    const prospects = yield* Effect.scoped(
      Layer.build(prospectService().layer).pipe(
        Effect.flatMap((ctx) => Effect.provide(prospectReadyLatency, ctx)),
      ),
    )
    latencies.push(...prospects.rows)
    notes.push(...prospects.notes)
  }
  if (selected("ingest")) {
    // Both gateways on a database and prefix of their own; the benchmark starts the workers itself.
    const ingest = yield* Effect.scoped(
      Layer.build(prospectService({ ROLES: "partner-api,ingest-api" }).layer).pipe(
        Effect.flatMap((ctx) => Effect.provide(ingestThroughput, ctx)),
      ),
    )
    rows.push(...ingest.rows)
    latencies.push(...ingest.latencies)
    notes.push(...ingest.notes)
  }
  if (selected("processes")) {
    // The service as a child process, one gateway process and then two, on a database and prefix of their own.
    const service = prospectService({ ROLES: "partner-api,ingest-api" })
    const processes = yield* Effect.scoped(
      Layer.build(service.layer).pipe(
        Effect.flatMap((ctx) => Effect.provide(gatewayProcessesThroughput(service.env), ctx)),
      ),
    )
    rows.push(...processes.rows)
    notes.push(...processes.notes)
  }
  if (selected("webhooks")) {
    // The receiver, the database and the prefix are the benchmark's own; it starts the workers itself.
    const webhooks = yield* webhookBench
    rows.push(...webhooks.rows)
    latencies.push(...webhooks.latencies)
    notes.push(...webhooks.notes)
  }
  if (selected("workers")) {
    // The receiver, the databases and the prefixes are the benchmark's own; the workers run as child processes.
    const workers = yield* Effect.scoped(workersProcessesThroughput)
    rows.push(...workers.rows)
    notes.push(...workers.notes)
  }
  if (selected("retention")) {
    // The receiver, the database and the prefix are the benchmark's own; it starts the workers itself.
    const retention = yield* retentionBench
    latencies.push(...retention.latencies)
    notes.push(...retention.notes)
  }
  const extraTables: Array<string> = []
  if (selected("console")) {
    // A database of its own, seeded once and kept (ps_bench_console); no NATS.
    const consoleResult = yield* consoleBench
    extraTables.push(consoleResult.table)
    notes.push(...consoleResult.notes)
  }
  if (selected("startup")) {
    const startup = yield* startupLatencies
    latencies.push(...startup.rows)
    notes.push(...startup.notes)
  }
  const tables = [
    ...(rows.length > 0 ? [format(rows)] : []),
    ...(latencies.length > 0 ? [formatLatency(latencies)] : []),
    ...extraTables,
    ...(notes.length > 0 ? [notes.join("\n")] : []),
  ]
  process.stdout.write(`${tables.join("\n\n")}\n`)
})

Effect.runPromise(program).catch((error) => {
  process.stderr.write(`${error}\n`)
  process.exitCode = 1
})

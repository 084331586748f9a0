import { Effect, Layer, Logger, References } from "effect"
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client"
import type { AppConfigShape } from "./Config.ts"

/** One metric with its values, as `getMetricsAsJSON` gives it. */
export type MetricJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>[number]

/**
 * One registry per process: every HTTP port's `/metrics` serves it, or on a primary with gateway processes, it
 * summed with theirs (`Processes.ts`).
 */
export const registry = new Registry()
collectDefaultMetrics({ register: registry })

const counter = (name: string, help: string, labelNames: ReadonlyArray<string>) =>
  new Counter({ name, help, labelNames, registers: [registry] })

/**
 * The gauges read from the system (streams, consumers, outbox, dead letters) when `/metrics` is, not on a timer:
 * JetStream's consumer info costs the server work (nats-server before 2.9.15 recounts a consumer's pending
 * messages on every later delivery), so it is asked only when someone looks. `systemSamplerLayer` reads them.
 */
const systemGauges: Array<Gauge> = []

const gauge = (name: string, help: string, labelNames: ReadonlyArray<string>) => {
  const made = new Gauge({ name, help, labelNames, registers: [registry] })
  systemGauges.push(made)
  return made
}

/**
 * This process's metrics as prom-client's JSON, without the system gauges: what a gateway process hands the
 * primary, which reads the system gauges once itself.
 */
export const ownMetrics = (): Promise<Array<MetricJson>> =>
  Promise.all(
    registry
      .getMetricsAsArray()
      .filter((m) => !(systemGauges as ReadonlyArray<unknown>).includes(m))
      .map((m) => (m as unknown as { get: () => Promise<MetricJson> }).get()),
  )

/** This process's registry summed with the gateway processes' `others` (counters, histograms and gauges added). */
export const aggregatedMetrics = async (others: ReadonlyArray<ReadonlyArray<MetricJson>>) => {
  const merged = AggregatorRegistry.aggregate([await registry.getMetricsAsJSON(), ...others])
  return merged.metrics()
}

/** The hook prom-client calls on a metric before reading it, which its types declare only as an option. */
type Collected = { collect?: (() => Promise<void>) | undefined }

/**
 * While the layer lives, each scrape first runs `sample`, which sets the system gauges: one reading for every
 * system gauge of a scrape (the registry collects its metrics concurrently). Released, the gauges keep their last
 * figures and are no longer read.
 */
export const systemSamplerLayer = <R>(sample: Effect.Effect<void, never, R>) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const context = yield* Effect.context<R>()
      let reading: Promise<void> | undefined
      const refresh = () => {
        reading ??= Effect.runPromiseWith(context)(sample).finally(() => {
          reading = undefined
        })
        return reading
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          for (const g of systemGauges) (g as Collected).collect = refresh
        }),
        () =>
          Effect.sync(() => {
            for (const g of systemGauges)
              if ((g as Collected).collect === refresh) (g as Collected).collect = undefined
          }),
      )
    }),
  )

/**
 * A counter or gauge updated per message: each labelled series is a plain number on the hot path, handed to
 * prom-client only when the registry is read (prom-client validates and hashes the label object on every update).
 * `series(labels)` is called once per series; its `inc` / `set` then cost an addition or an assignment.
 */
const hotSeries = (
  kind: "counter" | "gauge",
  name: string,
  help: string,
  labelNames: ReadonlyArray<string>,
) => {
  const all = new Map<string, { readonly labels: Record<string, string>; value: number; holders: number }>()
  const collect = function (this: Counter | Gauge) {
    this.reset()
    for (const { labels, value } of all.values()) {
      if (this instanceof Counter) this.inc(labels, value)
      else this.set(labels, value)
    }
  }
  if (kind === "counter") new Counter({ name, help, labelNames, registers: [registry], collect })
  else new Gauge({ name, help, labelNames, registers: [registry], collect })
  return (labels: Record<string, string>) => {
    const key = labelNames.map((label) => labels[label] ?? "").join("\u0000")
    let entry = all.get(key)
    if (entry === undefined) {
      entry = { labels, value: 0, holders: 0 }
      all.set(key, entry)
    }
    const series = entry
    series.holders++
    return {
      inc: (by = 1) => void (series.value += by),
      set: (value: number) => void (series.value = value),
      /** Gone from `/metrics` once every holder has released it: for a series of something that stops. */
      release: () => {
        if (--series.holders === 0 && all.get(key) === series) all.delete(key)
      },
    }
  }
}

export const metrics = {
  httpRequests: counter("http_requests_total", "HTTP requests answered", ["role", "method", "status"]),
  httpDuration: new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request duration",
    labelNames: ["role", "method"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  }),
  liveConnections: new Gauge({
    name: "console_live_connections",
    help: "Open live-view streams (GET /api/live) of the console",
    registers: [registry],
  }),
  liveDropped: counter(
    "console_live_dropped_total",
    "Live-view streams dropped because their browser fell behind (it reconnects and catches up)",
    [],
  ),
  outboxPublished: counter("outbox_published_total", "Outbox rows published to JetStream", []),
  outboxRelayErrors: counter("outbox_relay_errors_total", "Relay passes that failed and will be retried", []),
  loopLastPass: hotSeries(
    "gauge",
    "loop_last_pass_timestamp_seconds",
    "When a background loop last completed a pass (outbox_relay, retry_scheduler; actor:<name>, its slowest partition's last pull)",
    ["loop"],
  ),
  actorHandled: hotSeries("counter", "actor_handled_total", "Messages an actor settled, by outcome", [
    "actor",
    "outcome",
  ]),
  actorFailed: counter("actor_failed_total", "Messages that failed to decode or whose handler died", [
    "actor",
    "reason",
  ]),
  actorRedelivered: counter("actor_redelivered_total", "Messages delivered more than once", ["actor"]),
  actorReread: counter(
    "actor_reread_total",
    "Messages read back from the stream past an actor's checkpoint and handled again (when a process takes the lead of its checkpoints)",
    ["actor"],
  ),
  actorLag: hotSeries("gauge", "actor_lag_messages", "Messages waiting behind the last one delivered", [
    "actor",
    "partition",
  ]),
  streamMessages: gauge("jetstream_stream_messages", "Messages a JetStream stream holds", ["stream"]),
  streamBytes: gauge("jetstream_stream_bytes", "Bytes a JetStream stream holds", ["stream"]),
  streamMaxBytes: gauge("jetstream_stream_max_bytes", "A JetStream stream's byte limit (-1: none)", [
    "stream",
  ]),
  consumerPending: gauge(
    "jetstream_consumer_pending",
    "Messages a durable consumer has not been delivered yet",
    ["stream", "consumer"],
  ),
  consumerAckPending: gauge(
    "jetstream_consumer_ack_pending",
    "Messages a durable consumer was delivered and has not acknowledged",
    ["stream", "consumer"],
  ),
  consumerRedelivered: gauge(
    "jetstream_consumer_redelivered",
    "Messages a durable consumer was delivered more than once and has not acknowledged",
    ["stream", "consumer"],
  ),
  consumerOldestSeconds: gauge(
    "jetstream_consumer_oldest_unacked_seconds",
    "Age of the oldest message a durable consumer has not acknowledged (0 when caught up)",
    ["stream", "consumer"],
  ),
  outboxBacklog: gauge("outbox_backlog", "Outbox rows committed and not yet published", []),
  outboxOldestSeconds: gauge(
    "outbox_oldest_seconds",
    "Age of the oldest outbox row not yet published (0 when none)",
    [],
  ),
  deadLetters: gauge("dead_letters_total", "Messages actors terminated, kept in dead_letters", []),
  systemSampledAt: gauge(
    "system_sample_timestamp_seconds",
    "When the stream, consumer, outbox and dead-letter gauges were last read (at a scrape)",
    [],
  ),
  tokenHashes: new Gauge({
    name: "token_hashes_in_progress",
    help: "Client secrets being checked against their hash, by gateway",
    labelNames: ["gateway"],
    registers: [registry],
  }),
  tokenChecksWaiting: new Gauge({
    name: "token_secret_checks_waiting",
    help: "Client secrets waiting for a hash slot, by gateway and lane (client: a client with no recent failure from its address; stranger: the rest)",
    labelNames: ["gateway", "lane"],
    registers: [registry],
  }),
  tokenSecretChecks: counter(
    "token_secret_checks_total",
    "Client secrets checked against their hash, by gateway and lane",
    ["gateway", "lane"],
  ),
  tokenRequestsThrottled: counter(
    "token_requests_throttled_total",
    "Token requests answered 429 without checking the secret, by gateway and reason",
    ["gateway", "reason"],
  ),
  enrollmentLinksThrottled: counter(
    "enrollment_links_throttled_total",
    "Enrollment links and documents answered 429 without a lookup, by reason (failures: the address opened too many wrong ones; in_progress: too many lookups of the address at once)",
    ["reason"],
  ),
  portalStartsThrottled: counter(
    "portal_starts_throttled_total",
    "Portal links (/portal/start) answered 429 without exchanging the code, by reason (failures: the address opened too many wrong ones; in_progress: too many exchanges of the address at once)",
    ["reason"],
  ),
  signInHashes: new Gauge({
    name: "sign_in_hashes_in_progress",
    help: "Console sign-in passwords being checked against their hash (a decoy's for an unknown email)",
    registers: [registry],
  }),
  signInChecksWaiting: new Gauge({
    name: "sign_in_checks_waiting",
    help: "Console sign-in passwords waiting for a hash slot, by lane (address: a source with few recent failures, in its own lane; stranger: the rest)",
    labelNames: ["lane"],
    registers: [registry],
  }),
  signInChecks: counter(
    "sign_in_checks_total",
    "Console sign-in passwords checked against their hash, by lane",
    ["lane"],
  ),
  signInsThrottled: counter(
    "sign_ins_throttled_total",
    "Console sign-ins answered 429 without checking the password, by reason",
    ["reason"],
  ),
}

/** This process's loops and when each last completed a pass (epoch seconds), as `/metrics` shows them. */
export const readLoopPasses = (): Promise<
  ReadonlyArray<{ readonly loop: string; readonly passedAt: number }>
> =>
  (registry.getSingleMetric("loop_last_pass_timestamp_seconds") as Gauge)
    .get()
    .then((metric) =>
      metric.values
        .filter((v) => v.value > 0)
        .map((v) => ({ loop: String(v.labels.loop), passedAt: v.value })),
    )

const levels = { trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", error: "Error" } as const

/**
 * JSON lines at the configured level: on stdout for the service, or to `write` (the CLI's stderr, since its stdout
 * is its result).
 */
export const loggerLayer = (config: Pick<AppConfigShape, "logLevel">, write?: (line: string) => void) =>
  Layer.mergeAll(
    Logger.layer([write === undefined ? Logger.consoleJson : Logger.map(Logger.formatJson, write)]),
    Layer.succeed(References.MinimumLogLevel, levels[config.logLevel]),
  )

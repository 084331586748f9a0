import { loadavg } from "node:os"
import { performance } from "node:perf_hooks"
import { Effect } from "effect"
import postgres from "postgres"
import { Ingest, INGEST_PARTITIONS } from "../../backend/ingest/Ingest.ts"
import { partitionOf } from "../../backend/platform/Partition.ts"
import type { NatsShape } from "../../backend/platform/Nats.ts"
import { natsUrl } from "../support/TestPlatform.ts"
import { countSocketWrites, cpuProfile, machineCpu, percentile, statCpu } from "./Probes.ts"

const NATS_PORT = Number(new URL(natsUrl).port || 4222)

export const mean = (samples: ArrayLike<number>) => {
  let sum = 0
  for (let i = 0; i < samples.length; i++) sum += samples[i]!
  return samples.length === 0 ? Number.NaN : sum / samples.length
}
export const summary = (samples: ArrayLike<number>) =>
  `p50 ${percentile(samples, 50).toFixed(1)} / p90 ${percentile(samples, 90).toFixed(1)} / ` +
  `p99 ${percentile(samples, 99).toFixed(1)} / max ${percentile(samples, 100).toFixed(1)} ms (mean ${mean(samples).toFixed(2)})`

// ---------------------------------------------------------------------------------------------------------------
// Where CPU, round trips and event-loop time go during a phase.

export interface Usage {
  readonly wallMs: number
  /** CPU ms per event. */
  readonly mainThread: number
  readonly otherThreads: number
  readonly postgres: number
  readonly nats: number
  readonly machineBusyPct: number
  readonly othersPct: number
  readonly cores: number
  readonly commits: number
  readonly pgWrites: number
  readonly natsWrites: number
  readonly loopUtilization: number
  readonly loadBefore: number
  readonly loadAfter: number
}

/** Starts measuring; the returned function stops and divides by `count` events. */
export const usageProbe = async (admin: postgres.Sql, natsPids: ReadonlyArray<number>) => {
  const backendCpu = async () => {
    const rows = await admin<Array<{ pid: number }>>`
      select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    return new Map(
      await Promise.all(rows.map(async (r) => [r.pid, await statCpu(`/proc/${r.pid}/stat`)] as const)),
    )
  }
  const snap = async () => ({
    wall: performance.now(),
    process: process.cpuUsage(),
    main: await statCpu(`/proc/self/task/${process.pid}/stat`),
    backends: await backendCpu(),
    nats: (await Promise.all(natsPids.map((pid) => statCpu(`/proc/${pid}/stat`)))).reduce((a, b) => a + b, 0),
    machine: await machineCpu(),
    commits: Number(
      (
        await admin<Array<{ n: string }>>`
          select xact_commit as n from pg_stat_database where datname = current_database()`
      )[0]!.n,
    ),
    loop: performance.eventLoopUtilization(),
    load: loadavg()[0]!,
  })
  const stopCounting = countSocketWrites({ pg: admin.options.port[0] ?? 5432, nats: NATS_PORT })
  const before = await snap()
  return async (count: number): Promise<Usage> => {
    const writes = stopCounting()
    const after = await snap()
    const wall = after.wall - before.wall
    const processCpu = process.cpuUsage(before.process)
    const node = (processCpu.user + processCpu.system) / 1000
    const main = after.main - before.main
    let pg = 0
    for (const [pid, cpu] of after.backends) pg += cpu - (before.backends.get(pid) ?? 0)
    const nats = after.nats - before.nats
    const busy = after.machine.busy - before.machine.busy
    const cores = (after.machine.total - before.machine.total) / wall
    return {
      wallMs: wall,
      mainThread: main / count,
      otherThreads: Math.max(0, node - main) / count,
      postgres: pg / count,
      nats: nats / count,
      machineBusyPct: (100 * busy) / (wall * cores),
      othersPct: Math.max(0, (100 * (busy - node - pg - nats)) / (wall * cores)),
      cores,
      commits: (after.commits - before.commits) / count,
      pgWrites: writes.pg / count,
      natsWrites: writes.nats / count,
      loopUtilization: performance.eventLoopUtilization(after.loop, before.loop).utilization,
      loadBefore: before.load,
      loadAfter: after.load,
    }
  }
}

export const formatUsage = (usage: Usage) =>
  `CPU per event: node main thread (service) ${usage.mainThread.toFixed(3)} ms, other node threads (load ` +
  `generator, GC, libuv) ${usage.otherThreads.toFixed(3)} ms, postgres backends ${usage.postgres.toFixed(3)} ms, ` +
  `nats-server ${usage.nats.toFixed(3)} ms; main-thread event-loop utilization ${(100 * usage.loopUtilization).toFixed(0)}%; ` +
  `machine ${usage.machineBusyPct.toFixed(0)}% busy over ${usage.cores.toFixed(0)} cores, other processes ` +
  `${usage.othersPct.toFixed(0)}%, load average ${usage.loadBefore.toFixed(2)} -> ${usage.loadAfter.toFixed(2)}; ` +
  `${usage.commits.toFixed(2)} commits per event (pg_stat_database, lags ~1 s); socket writes per event ` +
  `${usage.pgWrites.toFixed(2)} to postgres (~ round trips), ${usage.natsWrites.toFixed(2)} to nats`

// ---------------------------------------------------------------------------------------------------------------
// CPU profiles of the main thread, summarized by self time.

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** A CPU profile of this thread until the returned function is called (sampled every 250 µs). */
export const startProfile = async (file: string) => {
  const stop = await cpuProfile(file, 250)
  return async () => (await stop()) as unknown as Profile
}

const ROOT = new URL("../../", import.meta.url).href

const category = (frame: ProfileNode["callFrame"]) => {
  const url = frame.url
  if (url === "") return frame.functionName.startsWith("(") ? frame.functionName : "(native/builtins)"
  const modules = url.lastIndexOf("/node_modules/")
  if (modules >= 0) {
    const [scope, name] = url.slice(modules + "/node_modules/".length).split("/")
    return scope!.startsWith("@") ? `${scope}/${name}` : scope!
  }
  if (url.startsWith("node:"))
    return `node:${url.slice(5).split("/")[0] === "internal" ? url.slice(14).split("/")[0] : url.slice(5)}`
  return url.startsWith(ROOT) ? url.slice(ROOT.length) : url
}

/** Self time of the profile by package/file and by function, the largest first. */
export const profileSummary = (profile: Profile) => {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]))
  const byCategory = new Map<string, number>()
  const byFunction = new Map<string, number>()
  let total = 0
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000
    const frame = byNode.get(id)!.callFrame
    total += ms
    const cat = category(frame)
    byCategory.set(cat, (byCategory.get(cat) ?? 0) + ms)
    const fn = `${frame.functionName || "(anonymous)"} ${cat}:${frame.lineNumber + 1}`
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms)
  })
  const top = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => `${name} ${((100 * ms) / total).toFixed(1)}%`)
      .join(", ")
  return [
    `self time by package/file: ${top(byCategory, 16)}`,
    `self time by function: ${top(byFunction, 20)}`,
  ]
}

// ---------------------------------------------------------------------------------------------------------------
// Probes inside the service (test-side wrappers, restored afterwards): JetStream ack latency of the gateway's
// publishes, and the ingest actor's handler time per event and per partition.

export const publishTimer = (nats: NatsShape, subjectPrefix: string) => {
  const target = nats as { -readonly [K in keyof NatsShape]: NatsShape[K] }
  const original = target.tryPublish
  const samples: Array<number> = []
  target.tryPublish = (subject, payload, options) => {
    const timed = original(subject, payload, options)
    if (!subject.startsWith(subjectPrefix)) return timed
    return Effect.suspend(() => {
      const start = performance.now()
      return Effect.tap(timed, () => Effect.sync(() => void samples.push(performance.now() - start)))
    })
  }
  return {
    samples,
    stop: () => {
      target.tryPublish = original
    },
  }
}

interface HandlerSpan {
  readonly partition: number
  readonly events: number
  readonly start: number
  readonly end: number
}

type ConsumeBatch = Ingest["Service"]["consumeBatch"]

/** Times every batch the ingest actor hands `Ingest.consumeBatch` (a batch is of one partition). */
export const handlerTimer = (ingest: Ingest["Service"]) => {
  const target = ingest as { consumeBatch: ConsumeBatch }
  const original = target.consumeBatch
  const spans: Array<HandlerSpan> = []
  const wrapped = (batch: Parameters<ConsumeBatch>[0]) =>
    Effect.suspend(() => {
      const start = performance.now()
      const first = batch[0]
      const id = (first?.event.payload as { id?: unknown } | undefined)?.id
      const partition = partitionOf(`${first?.event.source}/${String(id)}`, INGEST_PARTITIONS)
      return original(batch).pipe(
        Effect.tap(() =>
          Effect.sync(() => spans.push({ partition, events: batch.length, start, end: performance.now() })),
        ),
      )
    })
  target.consumeBatch = wrapped as unknown as ConsumeBatch
  return {
    spans,
    stop: () => {
      target.consumeBatch = original
    },
  }
}

/** Handler time per batch, the idle gap between one batch and the next on a partition, and how busy partitions were. */
export const handlerNotes = (spans: ReadonlyArray<HandlerSpan>, wallMs: number) => {
  if (spans.length === 0) return ["ingest handler: no spans recorded"]
  const durations = spans.map((s) => s.end - s.start)
  const sizes = spans.map((s) => s.events)
  const gaps: Array<number> = []
  const busy = new Array<number>(INGEST_PARTITIONS).fill(0)
  const counts = new Array<number>(INGEST_PARTITIONS).fill(0)
  const last = new Map<number, number>()
  for (const span of [...spans].sort((a, b) => a.start - b.start)) {
    const previous = last.get(span.partition)
    if (previous !== undefined) gaps.push(span.start - previous)
    last.set(span.partition, span.end)
    busy[span.partition]! += span.end - span.start
    counts[span.partition]! += span.events
  }
  const busyPct = busy.map((ms) => (100 * ms) / wallMs)
  const events = sizes.reduce((a, b) => a + b, 0)
  return [
    `ingest handler (Ingest.consumeBatch: map, owners, upsert, outbox, log, one transaction) per batch: ` +
      `${summary(durations)}; ${spans.length} batches, events per batch ${summary(sizes).replaceAll(" ms", "")}; ` +
      `${(durations.reduce((a, b) => a + b, 0) / events).toFixed(3)} ms of handler time per event`,
    `actor gap on a partition (batch end -> next batch start: acks, next pull and fetch, decode): ${summary(gaps)}`,
    `partitions busy in the handler: mean ${mean(busyPct).toFixed(0)}% (min ${Math.min(...busyPct).toFixed(0)}%, ` +
      `max ${Math.max(...busyPct).toFixed(0)}%); events per partition min ${Math.min(...counts)} / max ` +
      `${Math.max(...counts)}`,
  ]
}

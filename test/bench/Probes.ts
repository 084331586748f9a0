import { readdir, readFile, writeFile } from "node:fs/promises"
import { Socket } from "node:net"
import { Session } from "node:inspector/promises"
import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks"

/** The p-th percentile (nearest rank) of `samples`; NaN when there are none. */
export const percentile = (samples: ArrayLike<number>, p: number) => {
  if (samples.length === 0) return Number.NaN
  const sorted = Float64Array.from(samples).sort()
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Linux clock ticks (100 a second) as milliseconds. */
const ticksToMs = (ticks: number) => (ticks * 1000) / 100

/** CPU time (ms) of a process or thread from its `stat` file (`/proc/<pid>/stat`), or 0 when it is gone. */
export const statCpu = async (file: string) => {
  const stat = await readFile(file, "utf8").catch(() => "")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return ticksToMs(Number(fields[11] ?? 0) + Number(fields[12] ?? 0))
}

/** The pids of the processes on this machine whose command is `name`. */
export const pidsNamed = async (name: string) => {
  const pids: Array<number> = []
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const comm = await readFile(`/proc/${entry}/comm`, "utf8").catch(() => "")
    if (comm.trim() === name) pids.push(Number(entry))
  }
  return pids
}

/** The pids of the nats-server processes on this machine. */
export const natsServerPids = () => pidsNamed("nats-server")

/** CPU time (ms) of every process on this machine whose command is `name` (postgres: all its backends). */
export const cpuOfNamed = async (name: string) =>
  (await Promise.all((await pidsNamed(name)).map((pid) => statCpu(`/proc/${pid}/stat`)))).reduce(
    (a, b) => a + b,
    0,
  )

/**
 * CPU time (ms, all cores) of the whole machine: busy (this machine's own work), stolen (its virtual CPUs ready to
 * run while the hypervisor ran something else) and in all.
 */
export const machineCpu = async () => {
  const [, ...ticks] = (await readFile("/proc/stat", "utf8")).split("\n")[0]!.trim().split(/\s+/).map(Number)
  const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0)
  const [idle, iowait, steal] = [ticks[3]!, ticks[4]!, ticks[7]!]
  return { busy: ticksToMs(total - idle - iowait - steal), steal: ticksToMs(steal), total: ticksToMs(total) }
}

/** Starts a V8 CPU profile of this thread; the returned function stops it, writes it to `file` and returns it. */
export const cpuProfile = async (file: string, intervalMicros: number) => {
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: intervalMicros })
  await session.post("Profiler.start")
  return async () => {
    const { profile } = await session.post("Profiler.stop")
    await writeFile(file, JSON.stringify(profile))
    session.disconnect()
    return profile
  }
}

/**
 * Counts this thread's garbage collections and their pauses of it (ms), minor (scavenges) and major
 * (mark-compact) apart; the function it returns stops counting and returns the figures. The collector's helper
 * threads' own time is not in them.
 */
export const countGcPauses = () => {
  const counts = { minor: 0, minorMs: 0, major: 0, majorMs: 0 }
  const add = (entries: ReadonlyArray<PerformanceEntry>) => {
    for (const entry of entries) {
      const kind = (entry as PerformanceEntry & { readonly detail?: { readonly kind?: number } }).detail?.kind
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        counts.minor++
        counts.minorMs += entry.duration
      } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        counts.major++
        counts.majorMs += entry.duration
      }
    }
  }
  const observer = new PerformanceObserver((list) => add(list.getEntries()))
  observer.observe({ entryTypes: ["gc"] })
  return () => {
    add(observer.takeRecords())
    observer.disconnect()
    return counts
  }
}

/**
 * Counts this process's socket writes to each named peer port (a write is a syscall, and on this VM one costs
 * tens of microseconds); the function it returns restores `Socket.write` and returns the counts.
 */
export const countSocketWrites = <K extends string>(ports: Readonly<Record<K, number>>) => {
  const peers = Object.entries(ports) as Array<[K, number]>
  const counts = Object.fromEntries(peers.map(([name]) => [name, 0])) as Record<K, number>
  const write = Socket.prototype.write
  Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket["write"]>) {
    for (const [name, port] of peers) if (this.remotePort === port) counts[name]++
    return write.apply(this, args)
  } as Socket["write"]
  return () => {
    Socket.prototype.write = write
    return counts
  }
}

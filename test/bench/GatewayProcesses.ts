import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { ingestClient, PROSPECT_UPDATE_MAPPING, setMapping } from "../support/Ingest.ts"
import { spawnProcess } from "../support/ChildProcess.ts"
import { freePort } from "../support/Net.ts"
import { issueSource, prospectPartner, provisionedOwner } from "../support/Prospects.ts"
import { machineCpu, statCpu } from "./Probes.ts"
import { driver, eventBodies, EVENTS, SOURCE, statusNote, WARMUP } from "./Ingest.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** `BENCH_PROCESSES_ROUNDS` rounds of one process then two. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_PROCESSES_ROUNDS ?? 2))

/**
 * The ingestion gateway as the service runs it (`backend/main.ts`, the ingest-api role alone, no workers), once
 * with `HTTP_PROCESSES=1` and once with 2, driven as the ingest benchmark drives it (`BENCH_INGEST_EVENTS` POSTs
 * after `BENCH_INGEST_WARMUP` uncounted ones, from a worker thread of this process, each event for a prospect of
 * its own): accepted events per second with two gateway processes against one, each the best of
 * `BENCH_PROCESSES_ROUNDS` alternating rounds. The process under test shares
 * the machine with the load generator, Postgres and nats-server; `env` is the service's own (its database, its
 * prefix, its key), set up by the caller's in-process service, whose token the forks accept.
 */
export const gatewayProcessesThroughput = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const partner = yield* prospectPartner()
    yield* issueSource({ code: SOURCE, clients: [partner.clientId] })
    const slug = yield* provisionedOwner(partner, "org-ingest-processes-bench")
    const client = yield* ingestClient(SOURCE, [slug])
    yield* setMapping(SOURCE, PROSPECT_UPDATE_MAPPING)
    const load = yield* Effect.acquireRelease(
      Effect.sync(() => driver(client.token)),
      (load) => Effect.promise(load.close),
    )
    const notes: Array<string> = []

    const acceptedPerSecond = (processes: number, round: number) =>
      Effect.scoped(
        Effect.gen(function* () {
          const port = yield* Effect.promise(freePort)
          const service = yield* spawnProcess(process.execPath, ["backend/main.ts"], {
            cwd: root,
            env: {
              ...env,
              ROLES: "ingest-api",
              INGEST_API_PORT: String(port),
              HTTP_PROCESSES: String(processes),
              METRICS_PORT: "",
              LOG_LEVEL: "info",
            },
          })
          yield* service.waitFor("stdout", /"message":"started"/)
          const started = JSON.parse(
            service
              .stdout()
              .split("\n")
              .find((line) => line.includes('"message":"started"'))!,
          ) as { annotations: { gateway_pids?: ReadonlyArray<number> } }
          const pids = [service.pid, ...(started.annotations.gateway_pids ?? [])]
          const serviceCpu = async () => {
            let ms = 0
            for (const pid of pids) ms += await statCpu(`/proc/${pid}/stat`)
            return ms
          }
          const primaryCpu = () => statCpu(`/proc/${service.pid}/stat`)
          const result = yield* Effect.promise(async () => {
            const warm = await load.run(port, eventBodies(`warm${processes}r${round}`, WARMUP))
            if ((warm.statuses["202"] ?? 0) !== WARMUP) throw new Error(`warm-up: ${statusNote(warm)}`)
            const [cpuBefore, primaryBefore, machineBefore] = [
              await serviceCpu(),
              await primaryCpu(),
              await machineCpu(),
            ]
            const run = await load.run(port, eventBodies(`procs${processes}r${round}`, EVENTS))
            const [cpuAfter, primaryAfter, machineAfter] = [
              await serviceCpu(),
              await primaryCpu(),
              await machineCpu(),
            ]
            const busy =
              (100 * (machineAfter.busy - machineBefore.busy)) / (machineAfter.total - machineBefore.total)
            notes.push(
              `- ${processes} gateway process(es), round ${round + 1}: ${Math.round(EVENTS / run.seconds).toLocaleString("en-US")} accepted/s, ` +
                `${((cpuAfter - cpuBefore) / EVENTS).toFixed(3)} CPU ms per event in the service's processes ` +
                `(${Math.round((cpuAfter - cpuBefore) / 10 / run.seconds)}% of a core${processes > 1 ? `; the primary ${Math.round(primaryAfter - primaryBefore)} ms of it` : ""}), ` +
                `machine ${Math.round(busy)}% busy`,
            )
            return run
          })
          yield* service.signal("SIGTERM")
          const exit = yield* service.exited
          if (exit.code !== 0) notes.push(`- ${processes} gateway process(es) exited ${JSON.stringify(exit)}`)
          if ((result.statuses["202"] ?? 0) !== EVENTS) {
            notes.push(`- ${processes} gateway process(es): ${statusNote(result)}`)
          }
          return EVENTS / result.seconds
        }),
      )

    // Rounds alternate one process and two, so a neighbour's burst on the machine does not land on one side only;
    // each side's best round is its figure, and every round is in the notes.
    const runs: Record<1 | 2, Array<number>> = { 1: [], 2: [] }
    for (let round = 0; round < ROUNDS; round++) {
      runs[1].push(yield* acceptedPerSecond(1, round))
      runs[2].push(yield* acceptedPerSecond(2, round))
    }
    const one = Math.max(...runs[1])
    const two = Math.max(...runs[2])
    const perRound = (figures: ReadonlyArray<number>) =>
      figures.map((f) => Math.round(f).toLocaleString("en-US")).join(", ")
    notes.push(
      `- gateway processes, accepted events/s by round: one process ${perRound(runs[1])}; two ${perRound(runs[2])}`,
    )
    return {
      rows: [
        {
          name: `ingest accepted, two gateway processes vs one: ${EVENTS} POST /events (backend/main.ts, HTTP_PROCESSES=2; target >= 1.6x)`,
          ours: two,
          baseline: one,
          unit: "events/s",
          baselineName: "the same with HTTP_PROCESSES=1",
        },
      ],
      notes,
    }
  })

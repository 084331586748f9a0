import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { ingestClient, PROSPECT_UPDATE_MAPPING, setMapping } from "../support/Ingest.ts"
import { spawnProcess } from "../support/ChildProcess.ts"
import { freePort } from "../support/Net.ts"
import { issueSource, prospectPartner, provisionedOwner } from "../support/Prospects.ts"
import { driver, eventBodies, EVENTS, SOURCE, statusNote, WARMUP } from "./Ingest.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

/**
 * The ingestion gateway as the service runs it (`backend/main.ts`, the ingest-api role alone, no workers), once
 * with `HTTP_PROCESSES=1` and once with 2, driven as the ingest benchmark drives it (`BENCH_INGEST_EVENTS` POSTs
 * after `BENCH_INGEST_WARMUP` uncounted ones, from a worker thread of this process, each event for a prospect of
 * its own): accepted events per second with two gateway processes against one. The process under test shares
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

    const acceptedPerSecond = (processes: number) =>
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
          const result = yield* Effect.promise(async () => {
            const warm = await load.run(port, eventBodies(`warm${processes}`, WARMUP))
            if ((warm.statuses["202"] ?? 0) !== WARMUP) throw new Error(`warm-up: ${statusNote(warm)}`)
            return load.run(port, eventBodies(`procs${processes}`, EVENTS))
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

    const one = yield* acceptedPerSecond(1)
    const two = yield* acceptedPerSecond(2)
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

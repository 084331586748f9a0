import { Context, Effect, Layer } from "effect"
import { appLayer } from "./App.ts"
import { loadAppConfig } from "./platform/Config.ts"
import { ListeningPorts } from "./platform/Http.ts"
import { runMain } from "./platform/RunMain.ts"
import { loggerLayer } from "./platform/Observability.ts"
import {
  announceListening,
  forksGateways,
  gatewayProcesses,
  isGatewayProcess,
  ownRoles,
} from "./platform/Processes.ts"

const SHUTDOWN_BUDGET_MS = 10_000

/**
 * NodeRuntime interrupts on SIGINT/SIGTERM and the layers drain; this bounds how long that may take. It stays
 * listening: a second signal (a supervisor signalling the whole process group, npm and the bootstrap relaying it again) must not
 * kill the process mid-drain, as Node's default action would once no listener is left.
 */
const forceExitLater = () => {
  let stopping = false
  return () => {
    if (stopping) return
    stopping = true
    setTimeout(() => {
      process.stderr.write(`shutdown took longer than ${SHUTDOWN_BUDGET_MS} ms; exiting\n`)
      process.exit(1)
    }, SHUTDOWN_BUDGET_MS).unref()
  }
}

/**
 * The service's process. With `HTTP_PROCESSES` above 1 it is the primary: it runs the roles that run once
 * (workers, `METRICS_PORT`) and forks the gateway processes (`Processes.ts`), and says `started` once every one
 * listens. A gateway process serves the gateways, each of its lines carrying its pid, and tells the primary.
 */
const main = Effect.gen(function* () {
  const config = yield* loadAppConfig
  const gatewayProcess = isGatewayProcess()
  yield* Effect.gen(function* () {
    const ports = Context.get(
      yield* Layer.build(appLayer({ ...config, roles: ownRoles(config) })),
      ListeningPorts,
    )
    const onSignal = forceExitLater()
    if (gatewayProcess) {
      announceListening(ports)
    } else {
      const forks = forksGateways(config) ? yield* gatewayProcesses(config) : undefined
      yield* Effect.logInfo("started").pipe(
        Effect.annotateLogs({
          roles: config.roles.join(","),
          ports: Object.fromEntries([...(forks?.ports ?? []), ...ports]),
          node: process.versions.node,
          ...(forks === undefined ? {} : { gateway_processes: forks.pids.length, gateway_pids: forks.pids }),
        }),
      )
    }
    process.on("SIGINT", onSignal).on("SIGTERM", onSignal)
    return yield* Effect.never
  }).pipe(
    Effect.scoped,
    gatewayProcess ? Effect.annotateLogs({ pid: process.pid }) : (self) => self,
    Effect.provide(loggerLayer(config)),
  )
}).pipe(
  Effect.catchTag("ConfigInvalid", (error) =>
    Effect.sync(() => {
      process.stderr.write(`${error.message}\n`)
      process.exitCode = 1
    }),
  ),
)

runMain(main)

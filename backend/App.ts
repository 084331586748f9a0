import { Layer } from "effect"
import { AppConfig, type AppConfigShape, type HttpRole } from "./platform/Config.ts"
import { gatewayLayer, ListeningPorts, type Route } from "./platform/Http.ts"
import { relayLayer } from "./platform/Outbox.ts"
import { PlatformLayer } from "./platform/Platform.ts"

/** Routes each gateway serves besides health, readiness and metrics; the context issues add theirs here. */
export const routesByRole: Record<HttpRole, ReadonlyArray<Route<never>>> = {
  "partner-api": [],
  "ingest-api": [],
  enrollment: [],
  console: [],
}

/** Every role of `config.roles` on the platform; `ListeningPorts` tells which ports the gateways bound. */
export const appLayer = (config: AppConfigShape) => {
  const gateways = (Object.keys(routesByRole) as Array<HttpRole>)
    .filter((role) => config.roles.includes(role))
    .map((role) => gatewayLayer(role, routesByRole[role]))
  const workers = config.roles.includes("workers") ? [relayLayer()] : []
  return Layer.mergeAll(Layer.empty, ...gateways, ...workers).pipe(
    Layer.provideMerge(ListeningPorts.layer),
    Layer.provide(PlatformLayer),
    Layer.provide(Layer.succeed(AppConfig, config)),
  )
}

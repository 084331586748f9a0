import { Layer } from "effect"
import { Auth } from "./auth/Auth.ts"
import { authGuard, authRoutes } from "./auth/Http.ts"
import { AppConfig, type AppConfigShape, type HttpRole } from "./platform/Config.ts"
import { gatewayLayer, type Guard, ListeningPorts, type Route } from "./platform/Http.ts"
import { relayLayer } from "./platform/Outbox.ts"
import { PlatformLayer } from "./platform/Platform.ts"
import { referenceRoutes } from "./platform/Reference.ts"
import { rosterRoutes } from "./roster/Http.ts"
import { Roster } from "./roster/Roster.ts"

/** What route handlers may use, besides the platform. */
type AppServices = Auth | AppConfig | Roster

const partnerRoutes: ReadonlyArray<Route<AppServices>> = [...authRoutes("partner"), ...rosterRoutes]

/** Routes each gateway serves besides health, readiness and metrics; the context issues add theirs here. */
export const routesByRole: Record<HttpRole, ReadonlyArray<Route<AppServices>>> = {
  // The reference documents whatever the partner gateway serves, itself included (its routes have no doc).
  "partner-api": [...partnerRoutes, ...referenceRoutes(() => routesByRole["partner-api"])],
  "ingest-api": authRoutes("ingest"),
  enrollment: [],
  console: [],
}

/** How each gateway authenticates its non-public routes (a gateway without a guard refuses them). */
const guards: Partial<Record<HttpRole, Guard<AppServices>>> = {
  "partner-api": authGuard("partner"),
  "ingest-api": authGuard("ingest"),
}

/** Every role of `config.roles` on the platform; `ListeningPorts` tells which ports the gateways bound. */
export const appLayer = (config: AppConfigShape) => {
  const gateways = (Object.keys(routesByRole) as Array<HttpRole>)
    .filter((role) => config.roles.includes(role))
    .map((role) => gatewayLayer(role, routesByRole[role], guards[role]))
  const workers = config.roles.includes("workers") ? [relayLayer()] : []
  return Layer.mergeAll(Layer.empty, ...gateways, ...workers).pipe(
    Layer.provideMerge(ListeningPorts.layer),
    Layer.provideMerge(Layer.mergeAll(Auth.layer, Roster.layer)),
    Layer.provideMerge(PlatformLayer),
    Layer.provide(Layer.succeed(AppConfig, config)),
  )
}

import { fileURLToPath } from "node:url"
import { Effect, Layer } from "effect"
import { Auth } from "./auth/Auth.ts"
import { authGuard, authRoutes } from "./auth/Http.ts"
import { ingestWorkersLayer } from "./ingest/Consumer.ts"
import { enrollmentRoutes } from "./enrollment/Http.ts"
import { EnrollmentConfig } from "./enrollment/Config.ts"
import { Journey } from "./enrollment/Journey.ts"
import { LinkThrottle } from "./enrollment/LinkThrottle.ts"
import { IngestConfig } from "./ingest/Config.ts"
import { ingestRoutes } from "./ingest/Http.ts"
import { BulkRetries } from "./webhooks/bulk/BulkRetries.ts"
import { Deliveries } from "./operator/DeliveryQueries.ts"
import { Directory } from "./operator/Directory.ts"
import { Health } from "./operator/Health.ts"
import { LiveFeed } from "./operator/LiveFeed.ts"
import { Retention } from "./operator/Retention.ts"
import { System } from "./operator/System.ts"
import { IngestLog } from "./operator/IngestLog.ts"
import { Ingest } from "./ingest/Ingest.ts"
import { AppConfig, type AppConfigShape, type HttpRole, type ServiceEnv } from "./platform/Config.ts"
import { actorLayer } from "./platform/Actor.ts"
import { consoleSiteRoutes } from "./platform/ConsoleSite.ts"
import { Crypto } from "./platform/Crypto.ts"
import { gatewayLayer, metricsLayer } from "./platform/Gateway.ts"
import { type Guard, ListeningPorts, type Route } from "./platform/Http.ts"
import { loopPassesLayer } from "./platform/LoopPasses.ts"
import { relayLayer } from "./platform/Outbox.ts"
import { tracingLayer } from "./platform/Tracing.ts"
import { PlatformLayer } from "./Infrastructure.ts"
import { documentActor } from "./policies/Consumer.ts"
import { lifecycleLayer } from "./policies/Lifecycle.ts"
import { lifecycleJobLayer } from "./policies/LifecycleJob.ts"
import { resetPoliciesLayer, stagingResetJobLayer } from "./policies/StagingResetJob.ts"
import type { MoveOuts } from "./policies/MoveOuts.ts"
import { moveOutRoutes } from "./policies/MoveOutsHttp.ts"
import { operatorApiRoutes } from "./operator/http/ApiRoutes.ts"
import { operatorGuard } from "./operator/http/Guard.ts"
import { DeliveryActions } from "./operator/DeliveryActions.ts"
import { Operators } from "./operator/Operators.ts"
import { policyRoutes } from "./operator/http/PolicyRoutes.ts"
import { Sessions } from "./operator/Sessions.ts"
import type { Billing } from "./policies/Billing.ts"
import { IssuerConfig, PaymentsConfig, StagingConfig } from "./policies/Config.ts"
import { Policies } from "./policies/Policies.ts"
import type { PolicyList } from "./policies/PolicyList.ts"
import type { Revisions } from "./policies/Revisions.ts"
import type { TestClocks } from "./policies/TestClocks.ts"
import { testClockRoutes } from "./policies/TestClocksHttp.ts"
import { PortalConfig } from "./portal/Config.ts"
import { portalRoutes } from "./portal/Http.ts"
import { portalSessionRoutes } from "./portal/PartnerHttp.ts"
import { PortalChanges } from "./portal/PortalChanges.ts"
import { portalSiteRoutes } from "./portal/Site.ts"
import { PortalReads } from "./portal/PortalReads.ts"
import { PortalSessions } from "./portal/PortalSessions.ts"
import { PortalRecoveries } from "./portal/Recoveries.ts"
import { PortalLive } from "./portal/PortalLive.ts"
import { LiveChanges } from "./webhooks/Live.ts"
import { StartThrottle } from "./portal/StartThrottle.ts"
import { eligibilityActor, staleProspectsLayer } from "./prospects/Consumer.ts"
import { EligibilityDecisions } from "./prospects/EligibilityDecisions.ts"
import { Enrollments } from "./prospects/Enrollments.ts"
import { prospectRoutes, stagingRoutes } from "./prospects/Http.ts"
import { ProspectBatches } from "./prospects/ProspectBatches.ts"
import { Prospects } from "./prospects/Prospects.ts"
import { Sources } from "./prospects/Sources.ts"
import { StagingResets } from "./prospects/StagingResets.ts"
import { referenceRoutes } from "./reference/ApiReference.ts"
import { rosterRoutes } from "./roster/Http.ts"
import { Roster } from "./roster/Roster.ts"
import { WebhookConfig } from "./webhooks/Config.ts"
import { Endpoints } from "./webhooks/endpoints/Endpoints.ts"
import { webhookRoutes } from "./webhooks/endpoints/Http.ts"
import { EndpointOperations } from "./webhooks/endpoints/Operations.ts"
import { webhookWorkersLayer } from "./webhooks/delivery/Workers.ts"
import { replayRoutes } from "./webhooks/replays/Http.ts"
import { replayRunnerLayer } from "./webhooks/replays/ReplayRunner.ts"
import { Replays } from "./webhooks/replays/Replays.ts"

/**
 * The operator console's build (`console/build.mjs`), served by the console role, with the partner portal's page
 * beside it, served by the portal role; backend/ runs from source.
 */
const CONSOLE_DIST = fileURLToPath(new URL("../dist/console", import.meta.url))

/** What route handlers and actors may use, besides the platform. */
type AppServices =
  | Auth
  | AppConfig
  | PaymentsConfig
  | IssuerConfig
  | WebhookConfig
  | PortalConfig
  | PortalSessions
  | StartThrottle
  | PortalReads
  | PortalChanges
  | PortalRecoveries
  | PortalLive
  | Roster
  | Sources
  | Prospects
  | ProspectBatches
  | EligibilityDecisions
  | Enrollments
  | StagingResets
  | Ingest
  | Endpoints
  | Replays
  | Policies
  | Journey
  | LinkThrottle
  | MoveOuts
  | TestClocks
  | Crypto
  | Operators
  | Sessions
  | EndpointOperations
  | Revisions
  | PolicyList
  | Billing
  | Deliveries
  | Directory
  | DeliveryActions
  | Health
  | BulkRetries
  | LiveFeed
  | System
  | IngestLog
  | Revisions

/**
 * Routes each gateway serves besides health, readiness and metrics; the context issues add theirs here. The
 * staging reset routes exist only when `SERVICE_ENV=staging`, the test clock only outside production.
 */
export const routesFor = (role: HttpRole, serviceEnv: ServiceEnv): ReadonlyArray<Route<AppServices>> => {
  switch (role) {
    case "partner-api": {
      // The reference documents whatever the partner gateway serves, itself included (its routes have no doc).
      const routes: ReadonlyArray<Route<AppServices>> = [
        ...authRoutes("partner"),
        ...rosterRoutes,
        ...prospectRoutes,
        ...webhookRoutes,
        ...portalSessionRoutes,
        ...replayRoutes,
        ...moveOutRoutes,
        ...(serviceEnv === "staging" ? stagingRoutes : []),
        ...(serviceEnv === "production" ? [] : testClockRoutes),
        ...referenceRoutes(() => routes),
      ]
      return routes
    }
    case "ingest-api":
      // The prospect routes too, for older integrations holding legacy Partner API scopes on this gateway; a
      // client without them gets 403.
      return [...authRoutes("ingest"), ...ingestRoutes, ...prospectRoutes]
    case "enrollment":
      return enrollmentRoutes
    case "portal":
      // The API's routes go before the site, whose catch-all answers every other GET under /portal/ with the app.
      return [...portalRoutes, ...portalSiteRoutes(CONSOLE_DIST)]
    case "console":
      // The operator API's routes go before the site, whose catch-all answers every other GET with the app.
      return [...policyRoutes, ...operatorApiRoutes, ...consoleSiteRoutes(CONSOLE_DIST)]
  }
}

/** How each gateway authenticates its non-public routes (a gateway without a guard refuses them). */
const guards: Partial<Record<HttpRole, Guard<AppServices>>> = {
  "partner-api": authGuard("partner"),
  "ingest-api": authGuard("ingest"),
  console: operatorGuard,
}

/** The gateways on the platform's ports; the portal's port is a setting of its own context. */
const httpRoles: ReadonlyArray<Exclude<HttpRole, "portal">> = [
  "partner-api",
  "ingest-api",
  "enrollment",
  "console",
]

/** The portal's face: public routes only (its cookie is checked by the routes), on `PORTAL_PORT`. */
const portalGatewayLayer = (config: AppConfigShape) =>
  Layer.unwrap(
    Effect.map(Effect.service(PortalConfig), (portal) =>
      gatewayLayer("portal", routesFor("portal", config.serviceEnv), undefined, portal.port),
    ),
  )

/** Every role of `config.roles` on the platform; `ListeningPorts` tells which ports the gateways bound. */
export const appLayer = (config: AppConfigShape) => {
  const gateways = httpRoles
    .filter((role) => config.roles.includes(role))
    .map((role) => gatewayLayer(role, routesFor(role, config.serviceEnv), guards[role]))
  if (config.roles.includes("portal")) gateways.push(portalGatewayLayer(config))
  const workers = config.roles.includes("workers")
    ? [
        relayLayer(),
        loopPassesLayer,
        actorLayer(eligibilityActor),
        staleProspectsLayer,
        actorLayer(documentActor),
        lifecycleJobLayer,
        ingestWorkersLayer,
        webhookWorkersLayer,
        replayRunnerLayer,
        BulkRetries.runnerLayer,
        Health.pruneLayer,
        Retention.sweepLayer,
        // Staging keeps its promise of being reset periodically; other environments never reset anything.
        ...(config.serviceEnv === "staging" ? [stagingResetJobLayer] : []),
      ]
    : []
  return Layer.mergeAll(Layer.empty, ...gateways, metricsLayer, System.gaugesLayer, ...workers).pipe(
    Layer.provideMerge(ListeningPorts.layer),
    Layer.provideMerge(Layer.mergeAll(LiveFeed.layer, PortalLive.layer)),
    Layer.provideMerge(LiveChanges.layer),
    Layer.provideMerge(PortalRecoveries.layer),
    Layer.provideMerge(DeliveryActions.layer),
    Layer.provideMerge(BulkRetries.layer),
    Layer.provideMerge(
      Layer.mergeAll(
        Deliveries.layer,
        Directory.layer,
        Health.layer,
        Retention.layer,
        System.layer,
        IngestLog.layer,
      ),
    ),
    Layer.provideMerge(Ingest.layer),
    Layer.provideMerge(
      Layer.mergeAll(
        Endpoints.layer,
        Replays.layer,
        PortalSessions.layer,
        PortalReads.layer,
        PortalChanges.layer,
      ),
    ),
    Layer.provideMerge(Layer.mergeAll(Operators.layer, Sessions.layer, EndpointOperations.layer)),
    Layer.provideMerge(Layer.mergeAll(Journey.layer, LinkThrottle.layer, StartThrottle.layer)),
    Layer.provideMerge(lifecycleLayer),
    Layer.provideMerge(Policies.layer),
    Layer.provideMerge(
      Layer.mergeAll(
        Prospects.layer,
        ProspectBatches.layer,
        EligibilityDecisions.layer,
        Enrollments.layer,
        StagingResets.layer,
      ),
    ),
    // How a staging reset ends a renter's policies: the policies context's answer to the prospects' question.
    Layer.provideMerge(resetPoliciesLayer),
    Layer.provideMerge(Layer.mergeAll(Auth.layer, Roster.layer, Sources.layer, Crypto.layer)),
    Layer.provideMerge(PlatformLayer),
    // The contexts' settings first, so a bad one fails the start before anything connects.
    Layer.provideMerge(
      Layer.mergeAll(
        WebhookConfig.layer,
        PaymentsConfig.layer,
        IssuerConfig.layer,
        StagingConfig.layer,
        IngestConfig.layer,
        EnrollmentConfig.layer,
        PortalConfig.layer,
      ),
    ),
    // Spans go out from the first layer on: every layer above is built, and its fibers run, with this tracer.
    Layer.provideMerge(tracingLayer(config)),
    Layer.provide(Layer.succeed(AppConfig, config)),
  )
}

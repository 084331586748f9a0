import { Effect } from "effect"
import { NotFound, type Route } from "../../platform/Http.ts"
import { auditRoutes } from "./AuditRoutes.ts"
import { bulkRetryRoutes } from "./BulkRetryRoutes.ts"
import { deliveryRoutes } from "./DeliveryRoutes.ts"
import { directoryRoutes } from "./DirectoryRoutes.ts"
import { endpointRoutes } from "./EndpointRoutes.ts"
import { ingestRoutes } from "./IngestRoutes.ts"
import { liveRoutes } from "./LiveRoutes.ts"
import { operatorRoutes } from "./OperatorRoutes.ts"
import { referenceRoutes } from "./ReferenceRoutes.ts"
import { replayRoutes } from "./ReplayRoutes.ts"
import type { OperatorServices } from "./Route.ts"
import { secretRoutes } from "./SecretRoutes.ts"
import { sessionRoutes } from "./SessionRoutes.ts"
import { systemRoutes } from "./SystemRoutes.ts"

/** Unknown `/api` paths answer the JSON 404, whatever the console's page fallback serves elsewhere. */
const apiNotFound: Route<never> = {
  method: "GET",
  path: "/api/**",
  access: "public",
  handle: () => Effect.fail(new NotFound({ message: "Not found." })),
}

/** Every route of the operator API (the console role's `/api`). */
export const operatorApiRoutes: ReadonlyArray<Route<OperatorServices>> = [
  ...sessionRoutes,
  ...referenceRoutes,
  ...auditRoutes,
  ...operatorRoutes,
  ...endpointRoutes,
  ...replayRoutes,
  ...deliveryRoutes,
  ...directoryRoutes,
  ...bulkRetryRoutes,
  ...liveRoutes,
  ...secretRoutes,
  ...systemRoutes,
  ...ingestRoutes,
  ...(["GET", "POST", "PUT", "PATCH", "DELETE"] as const).map((method) => ({ ...apiNotFound, method })),
]

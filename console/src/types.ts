// Shapes of the operator API (docs/operator-api.md), served under /api on the console port: the backend's own
// schemas (backend/operator/Api.ts), imported for their types only.

export type {
  Attempt,
  AuditEntry,
  BulkRetry,
  Delivery,
  DeliveryDetail,
  DeliveryPage,
  DeliveryStatus,
  Endpoint,
  EndpointHealth,
  EndpointStatus,
  HealthBucket,
  HealthSummary,
  HealthWindow,
  ListedEndpoint,
  OperatorAccount,
  OperatorRole as Role,
  OwnerRef,
  ProviderRef,
  Replay,
  ReplayRequest,
  SessionBody,
  SessionOperator as Operator,
  Subscriber,
} from "../../backend/operator/Api.ts"

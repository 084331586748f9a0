import { Effect } from "effect"
import { AuditChannel } from "../../audit/Audit.ts"
import type { AppConfig } from "../../platform/Config.ts"
import { type ApiError, type HttpRequest, NotFound, type Route, Unprocessable } from "../../platform/Http.ts"
import type { Billing } from "../../policies/Billing.ts"
import type { PolicyList } from "../../policies/PolicyList.ts"
import type { Revisions } from "../../policies/Revisions.ts"
import type { EndpointOperations } from "../../webhooks/endpoints/Operations.ts"
import type { BulkRetries } from "../../webhooks/bulk/BulkRetries.ts"
import type { Replays } from "../../webhooks/replays/Replays.ts"
import type { DeliveryActions } from "../DeliveryActions.ts"
import type { Deliveries } from "../DeliveryQueries.ts"
import type { Directory } from "../Directory.ts"
import type { Role } from "../Domain.ts"
import type { Health } from "../Health.ts"
import type { IngestLog } from "../IngestLog.ts"
import type { LiveFeed } from "../LiveFeed.ts"
import type { Operators } from "../Operators.ts"
import type { Sessions } from "../Sessions.ts"
import type { System } from "../System.ts"
import { needs } from "./Guard.ts"

/** What the operator routes use. */
export type OperatorServices =
  | Sessions
  | Operators
  | EndpointOperations
  | Replays
  | Deliveries
  | DeliveryActions
  | Directory
  | Health
  | BulkRetries
  | LiveFeed
  | System
  | IngestLog
  | Revisions
  | PolicyList
  | Billing
  | AppConfig

export const invalid = (message: string, resource: string, fields: Record<string, string>) =>
  new Unprocessable({ message, resource, fields })

/** Domain failures of the operator routes as the contract's errors. */
const toApiError = (error: { readonly _tag: string } & Record<string, unknown>): ApiError => {
  switch (error._tag) {
    case "OperatorRejected":
      return invalid("Invalid operator.", "operator", { [error.field as string]: error.message as string })
    case "OperatorNotFound":
      return new NotFound({ message: "Operator not found." })
    case "EndpointNotFound":
      return new NotFound({ message: "Endpoint not found." })
    case "CustomHeaderNotFound":
      return new NotFound({ message: "Custom header not found." })
    case "DeliveryNotFound":
      return new NotFound({ message: "Delivery not found." })
    case "OwnerUnknown":
      return new NotFound({ message: "Property owner not found." })
    case "BulkRetryInvalid":
      return invalid("Invalid bulk retry.", "bulk_retry", error.fields as Record<string, string>)
    case "BulkRetryNotFound":
      return new NotFound({ message: "Bulk retry not found." })
    case "DeliveryFilterInvalid":
      return invalid("Invalid filter.", "filter", error.fields as Record<string, string>)
    case "PolicyNotFound":
      return new NotFound({ message: `No policy ${String(error.policyNumber).slice(0, 64)}.` })
    case "OwnerPageNotFound":
      return new NotFound({ message: "Owner not found." })
    case "ProspectPageNotFound":
      return new NotFound({ message: "Prospect not found." })
    case "DeadLetterNotFound":
      return new NotFound({ message: "Dead letter not found." })
    case "ProviderNotProvisioned":
      return new NotFound({ message: "Provider not found." })
    case "ReplayInvalid":
      return invalid("Invalid replay params.", "replay", error.fields as Record<string, string>)
    case "ReplayBeyondRetention":
      return invalid(`Since is before the oldest event kept, ${String(error.oldest)}.`, "replay", {
        since: `must be ${String(error.oldest)} or later (the oldest event kept)`,
      })
    case "ReplayNotFound":
      return new NotFound({ message: "Replay not found." })
    default:
      return error as unknown as ApiError
  }
}

/** An object body, or 422. */
export const objectBody = (request: HttpRequest, resource: string) =>
  Effect.flatMap(request.json, (body) =>
    typeof body === "object" && body !== null && !Array.isArray(body)
      ? Effect.succeed(body as Record<string, unknown>)
      : Effect.fail(invalid("Request body must be a JSON object.", resource, { base: "must be an object" })),
  )

export const actorOf = (request: HttpRequest) => request.caller!.clientId

/** A route of the console: its writes audited as `console`, its domain failures in the contract's shape. */
export const route = <E extends { readonly _tag: string }>(
  method: Route["method"],
  path: string,
  role: Role | "public",
  handle: (request: HttpRequest) => Effect.Effect<Response, E | ApiError, OperatorServices>,
): Route<OperatorServices> => ({
  method,
  path,
  access: role === "public" ? "public" : needs(role),
  handle: (request) =>
    handle(request).pipe(
      Effect.mapError((error) => toApiError(error as never)),
      Effect.provideService(AuditChannel, "console"),
    ),
})

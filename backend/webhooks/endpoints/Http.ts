import { Effect } from "effect"
import { type ApiError, json, NotFound, type Route, Unprocessable } from "../../platform/Http.ts"
import { isJsonObject } from "../../platform/Validation.ts"
import {
  DEFAULT_PER_PAGE,
  type DeliveryNotFound,
  type DeliveryQueryInvalid,
  type EndpointInvalid,
  type EndpointNotFound,
  type OwnerUnknown,
  type ProviderNotProvisioned,
  DeliveryListResponse,
  DeliveryResponse,
  DeliveryStatuses,
  EndpointCreateRequest,
  EndpointListResponse,
  EndpointResponse,
  EndpointUpdateRequest,
  MAX_PER_PAGE,
} from "../Domain.ts"
import {
  body,
  ENDPOINTS_PATH as PREFIX,
  type Kind,
  notFound,
  refOf,
  subscriberNotFound,
  webhookRoute,
} from "../Routes.ts"
import { type EndpointBody, Endpoints, readEndpointFields } from "./Endpoints.ts"

const ENDPOINT_REQUIRED = "Endpoint must be an object with name, destination_url and events"

/** The changes of `{"endpoint": {...}}`, read by the service's rules for an endpoint's fields. */
const readEndpoint = (parsed: unknown, creating: boolean): EndpointBody => {
  const endpoint = isJsonObject(parsed) ? parsed.endpoint : undefined
  if (!isJsonObject(endpoint)) return { fields: { base: ENDPOINT_REQUIRED } }
  return readEndpointFields(endpoint, creating)
}

type WebhookError =
  | EndpointInvalid
  | DeliveryQueryInvalid
  | EndpointNotFound
  | DeliveryNotFound
  | ProviderNotProvisioned
  | OwnerUnknown

const toApiError = (error: WebhookError | ApiError, invalidEndpoint: string): ApiError => {
  switch (error._tag) {
    case "EndpointInvalid":
      return new Unprocessable({ message: invalidEndpoint, resource: "endpoint", fields: error.fields })
    case "DeliveryQueryInvalid":
      return new Unprocessable({
        message: "Invalid delivery params.",
        resource: "delivery",
        fields: error.fields,
      })
    case "DeliveryNotFound":
      return new NotFound({ message: "Delivery not found." })
    case "EndpointNotFound":
    case "ProviderNotProvisioned":
    case "OwnerUnknown":
      return subscriberNotFound(error)
    default:
      return error
  }
}

/** The one place where the webhook failures become the contract's error bodies. */
const apiErrors =
  (invalidEndpoint: string) =>
  <A, R>(effect: Effect.Effect<A, WebhookError | ApiError, R>): Effect.Effect<A, ApiError, R> =>
    Effect.mapError(effect, (error) => toApiError(error, invalidEndpoint))

const route = webhookRoute(apiErrors("Endpoint invalid."))
/** Creating names its 422 differently. */
const createRoute = webhookRoute(apiErrors("Invalid endpoint params."))

const noContent = () => new Response(null, { status: 204 })

const whose = (kind: Kind) =>
  kind === "owner"
    ? "of the owner; an endpoint registered on the provider route is not reachable here (404)"
    : "of the provider, covering every owner (or named property) the service configured for it; reachable only through provider routes"

const endpointRoutes = (kind: Kind): ReadonlyArray<Route<Endpoints>> => {
  const base = PREFIX[kind]
  const provider = kind === "provider" ? "provider " : ""
  return [
    createRoute({
      method: "POST",
      path: base,
      doc: {
        summary: `Create a ${provider}webhook endpoint`,
        description:
          `Registers an endpoint ${whose(kind)}. Body \`{"endpoint": {name, destination_url, events}}\`: ` +
          "`destination_url` must use HTTPS (no credentials in it), `events` are names of the catalog (no " +
          "wildcard). The endpoint starts `active`." +
          (kind === "owner"
            ? " The owner's subscriber and signing secret are created with its first endpoint; the operator shares the secret out of band."
            : " Answers 404 until the service has provisioned the provider."),
        body: EndpointCreateRequest,
        responses: [
          { status: 200, description: "The endpoint", schema: EndpointResponse },
          { status: 404, description: notFound(kind) },
          {
            status: 422,
            description:
              "`Invalid endpoint params.` with a message per field, e.g. 'Destination url must use HTTPS'",
          },
        ],
      },
      handle: (request) =>
        Effect.gen(function* () {
          const endpoint = yield* Endpoints.use((endpoints) =>
            Effect.flatMap(body(request), (input) =>
              endpoints.create(refOf(kind, request), readEndpoint(input, true)),
            ),
          )
          return json(200, { status_code: 200, endpoint })
        }),
    }),
    route({
      method: "GET",
      path: base,
      doc: {
        summary: `List ${provider}webhook endpoints`,
        description: `Every endpoint ${whose(kind)}, oldest first.`,
        responses: [
          { status: 200, description: "The endpoints", schema: EndpointListResponse },
          { status: 404, description: notFound(kind) },
        ],
      },
      handle: (request) =>
        Endpoints.use((endpoints) => endpoints.list(refOf(kind, request))).pipe(
          Effect.map((list) => json(200, { status_code: 200, endpoints: list })),
        ),
    }),
    route({
      method: "GET",
      path: `${base}/:id`,
      doc: {
        summary: `Fetch a ${provider}webhook endpoint`,
        responses: [
          { status: 200, description: "The endpoint", schema: EndpointResponse },
          { status: 404, description: notFound(kind) },
        ],
      },
      handle: (request) =>
        Endpoints.use((endpoints) => endpoints.get(refOf(kind, request), request.params.id ?? "")).pipe(
          Effect.map((endpoint) => json(200, { status_code: 200, endpoint })),
        ),
    }),
    route({
      method: "PUT",
      path: `${base}/:id`,
      doc: {
        summary: `Update a ${provider}webhook endpoint`,
        description:
          'Body `{"endpoint": {...}}` with any of `name`, `destination_url`, `events` and `status` (`active`, ' +
          "`suspended`, `disabled`); an omitted field keeps its value. Only `active` endpoints receive " +
          "deliveries. Setting a status clears the service's `suspension_reason` when the endpoint becomes " +
          "active again (or its status changes).",
        body: EndpointUpdateRequest,
        responses: [
          { status: 200, description: "The endpoint as updated", schema: EndpointResponse },
          { status: 404, description: notFound(kind) },
          {
            status: 422,
            description: "`Endpoint invalid.` with a message per field, e.g. 'Status is invalid'",
          },
        ],
      },
      handle: (request) =>
        Effect.gen(function* () {
          const input = yield* body(request)
          const endpoint = yield* Endpoints.use((endpoints) =>
            endpoints.update(refOf(kind, request), request.params.id ?? "", readEndpoint(input, false)),
          )
          return json(200, { status_code: 200, endpoint })
        }),
    }),
    route({
      method: "DELETE",
      path: `${base}/:id`,
      doc: {
        summary: `Delete a ${provider}webhook endpoint`,
        description:
          "Removes the endpoint: it receives nothing more, and every delivery of it not yet delivered fails " +
          "with 'Endpoint deleted; delivery canceled'.",
        responses: [
          { status: 204, description: "Deleted (no body)" },
          { status: 404, description: notFound(kind) },
        ],
      },
      handle: (request) =>
        Endpoints.use((endpoints) => endpoints.remove(refOf(kind, request), request.params.id ?? "")).pipe(
          Effect.map(noContent),
        ),
    }),
  ]
}

const deliveryRoutes = (kind: Kind): ReadonlyArray<Route<Endpoints>> => {
  const base = `${PREFIX[kind]}/:endpoint_id/deliveries`
  const provider = kind === "provider" ? "a provider " : "an "
  return [
    route({
      method: "GET",
      path: base,
      doc: {
        summary: `List deliveries for ${provider}endpoint`,
        description:
          `Newest first. Query parameters: \`page\` (from 1, default 1), \`per_page\` (1 to ${MAX_PER_PAGE}, ` +
          `default ${DEFAULT_PER_PAGE}) and \`status\` (${DeliveryStatuses.join(", ")}). \`meta\` gives the ` +
          "page, its size, the number of deliveries matching and of pages.",
        responses: [
          { status: 200, description: "One page of deliveries", schema: DeliveryListResponse },
          { status: 404, description: notFound(kind) },
          { status: 422, description: "`page`, `per_page` or `status` is not valid" },
        ],
      },
      handle: (request) =>
        Endpoints.use((endpoints) =>
          endpoints.deliveries(refOf(kind, request), request.params.endpoint_id ?? "", request.query),
        ).pipe(Effect.map((page) => json(200, { status_code: 200, ...page }))),
    }),
    route({
      method: "GET",
      path: `${base}/:id`,
      doc: {
        summary: `Fetch a delivery of ${provider}endpoint`,
        description:
          "The delivery with the exact payload sent (parsed), the last failure reason, and every attempt made " +
          "(status code, duration, failure reason, the first 4 KB of the answer).",
        responses: [
          { status: 200, description: "The delivery", schema: DeliveryResponse },
          { status: 404, description: `${notFound(kind)}, or no such delivery of it` },
        ],
      },
      handle: (request) =>
        Endpoints.use((endpoints) =>
          endpoints.delivery(refOf(kind, request), request.params.endpoint_id ?? "", request.params.id ?? ""),
        ).pipe(Effect.map((delivery) => json(200, { status_code: 200, delivery }))),
    }),
    route({
      method: "POST",
      path: `${base}/:id/retry`,
      doc: {
        summary: `Retry a delivery of ${provider}endpoint`,
        description:
          "Sends the delivery again, whatever its status, with the same delivery id and payload: a new series " +
          "of attempts starts at attempt 1 now. The body is ignored.",
        responses: [
          { status: 204, description: "Re-enqueued (no body)" },
          { status: 404, description: `${notFound(kind)}, or no such delivery of it` },
        ],
      },
      handle: (request) =>
        Endpoints.use((endpoints) =>
          endpoints.retry(refOf(kind, request), request.params.endpoint_id ?? "", request.params.id ?? ""),
        ).pipe(Effect.map(noContent)),
    }),
  ]
}

/** The webhook routes of the partner gateway: endpoints and deliveries, on the owner and provider paths. */
export const webhookRoutes: ReadonlyArray<Route<Endpoints>> = [
  ...endpointRoutes("owner"),
  ...deliveryRoutes("owner"),
  ...endpointRoutes("provider"),
  ...deliveryRoutes("provider"),
]

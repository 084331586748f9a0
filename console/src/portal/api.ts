import { Schema } from "effect"
import {
  CSRF_HEADER,
  CustomHeadersAnswer,
  DeliveryDetailAnswer,
  DeliveryPage,
  type EndpointBody,
  EndpointAnswer,
  EndpointHealthAnswer,
  EndpointsAnswer,
  EventsAnswer,
  PortalError,
  RecoveryAnswer,
  RetryAnswer,
  RotateAnswer,
  SecretAnswer,
  SessionAnswer,
  TestAnswer,
} from "../../../backend/portal/Api.ts"
import { ApiError, decodeAnswer, exchange, type Query, withQuery } from "../composables/api"

/*
 * Every call the portal makes to /portal/api: JSON in and out, the session's CSRF token on every change, and each
 * answer decoded with the backend's own schema (backend/portal/Api.ts). A 401 anywhere means the session ended:
 * the app then shows only how to open the portal again.
 */

const BASE = "/portal/api"

const link: { csrfToken: string | undefined; ended: () => void } = {
  csrfToken: undefined,
  ended: () => undefined,
}

/** Connects the calls to the session: its CSRF token, and what a 401 does. */
export const linkPortalSession = (csrfToken: string, ended: () => void) => {
  link.csrfToken = csrfToken
  link.ended = ended
}

const fallbackMessage = (status: number) =>
  status === 0
    ? "The portal could not reach the server. Check your connection and try again."
    : status >= 500
      ? "The server failed to answer. Try again in a moment."
      : `The request failed (HTTP ${status}).`

const decodeError = Schema.decodeUnknownOption(PortalError)
const decodeNoSession = Schema.decodeUnknownOption(Schema.Struct({ error: Schema.String }))

/** The contract's error body as an ApiError: its sentence, and the first message of each refused field. */
const errorFrom = (status: number, body: unknown): ApiError => {
  const refusal = decodeError(body)
  if (refusal._tag === "Some") {
    const fields: Record<string, string> = {}
    for (const [field, messages] of Object.entries(refusal.value.errors ?? {}))
      if (messages[0] !== undefined) fields[field] = messages[0]
    return new ApiError(status, refusal.value.error, fields)
  }
  const plain = decodeNoSession(body)
  return new ApiError(status, plain._tag === "Some" ? plain.value.error : fallbackMessage(status))
}

async function call(method: string, path: string, body?: unknown): Promise<unknown> {
  const headers: Record<string, string> = {}
  if (method !== "GET" && link.csrfToken !== undefined) headers[CSRF_HEADER] = link.csrfToken
  const response = await exchange({ method, url: `${BASE}${path}`, body }, headers, fallbackMessage(0))
  if (response.ok) return response.parsed
  if (response.status === 401) link.ended()
  throw errorFrom(response.status, response.parsed)
}

/** A call whose answer is decoded with `answer`, a schema of the portal's API. */
const portalApi = async <T>(answer: Schema.Decoder<T>, method: string, path: string, body?: unknown) =>
  decodeAnswer(answer, await call(method, path, body), method, path)

const id = (value: number | string) => encodeURIComponent(String(value))

export const getSession = () => portalApi(SessionAnswer, "GET", "/session")

export const listEndpoints = () => portalApi(EndpointsAnswer, "GET", "/endpoints").then((a) => a.endpoints)
export const getEndpointHealth = (endpoint: number) =>
  portalApi(EndpointHealthAnswer, "GET", `/endpoints/${id(endpoint)}/health`).then((a) => a.health)
export const createEndpoint = (body: EndpointBody) =>
  portalApi(EndpointAnswer, "POST", "/endpoints", body).then((a) => a.endpoint)
export const editEndpoint = (endpoint: number, body: EndpointBody) =>
  portalApi(EndpointAnswer, "PUT", `/endpoints/${id(endpoint)}`, body).then((a) => a.endpoint)
export const pauseEndpoint = (endpoint: number) =>
  portalApi(EndpointAnswer, "POST", `/endpoints/${id(endpoint)}/pause`).then((a) => a.endpoint)
export const resumeEndpoint = (endpoint: number) =>
  portalApi(EndpointAnswer, "POST", `/endpoints/${id(endpoint)}/resume`).then((a) => a.endpoint)
export const deleteEndpoint = async (endpoint: number) => {
  await call("DELETE", `/endpoints/${id(endpoint)}`)
}
export const getCustomHeaders = (endpoint: number) =>
  portalApi(CustomHeadersAnswer, "GET", `/endpoints/${id(endpoint)}/headers`).then((a) => a.names)
export const setCustomHeaders = (endpoint: number, values: Record<string, string | null>) =>
  portalApi(CustomHeadersAnswer, "PUT", `/endpoints/${id(endpoint)}/headers`, {
    custom_headers: values,
  }).then((a) => a.names)
export const sendTestEvent = (endpoint: number, event: string) =>
  portalApi(TestAnswer, "POST", `/endpoints/${id(endpoint)}/test`, { event }).then((a) => a.delivery)

/** The deliveries list's filters, in the URL and the API alike. */
export const DELIVERY_FILTERS = ["endpoint", "event_type", "status", "since", "until", "q"] as const
export type DeliveryFilter = (typeof DELIVERY_FILTERS)[number]

export const listDeliveries = (query: Query) =>
  portalApi(DeliveryPage, "GET", withQuery("/deliveries", query))
export const getDelivery = (delivery: number | string) =>
  portalApi(DeliveryDetailAnswer, "GET", `/deliveries/${id(delivery)}`).then((a) => a.delivery)
export const retryDelivery = (delivery: number) =>
  portalApi(RetryAnswer, "POST", `/deliveries/${id(delivery)}/retry`).then((a) => a.delivery)

export const listEvents = () => portalApi(EventsAnswer, "GET", "/events").then((a) => a.events)

export const getSecret = () => portalApi(SecretAnswer, "GET", "/secret")
export const rotateSecret = (overlapHours: number) =>
  portalApi(RotateAnswer, "POST", "/secret/rotate", { overlap_hours: overlapHours })

export const previewRecovery = (endpoint: number, since: string) =>
  portalApi(RecoveryAnswer, "POST", `/endpoints/${id(endpoint)}/recoveries`, { since }).then(
    (a) => a.recovery,
  )
export const startRecovery = (recovery: number) =>
  portalApi(RecoveryAnswer, "POST", `/recoveries/${id(recovery)}/start`).then((a) => a.recovery)
export const getRecovery = (recovery: number) =>
  portalApi(RecoveryAnswer, "GET", `/recoveries/${id(recovery)}`).then((a) => a.recovery)

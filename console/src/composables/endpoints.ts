import type { Endpoint, EndpointHealth, EndpointStatus } from "../types"
import { api, type Query, withQuery } from "./api"

export const ENDPOINT_FILTERS = ["owner", "provider", "status"] as const

export const listEndpoints = (filters: Query) =>
  api<{ endpoints: ReadonlyArray<Endpoint>; next_cursor: string | null }>(
    "GET",
    withQuery("/api/endpoints", filters),
  )

export const getEndpoint = (id: string) =>
  api<{ endpoint: Endpoint; health?: EndpointHealth }>("GET", `/api/endpoints/${encodeURIComponent(id)}`)

export const setEndpointStatus = async (id: string | number, status: EndpointStatus, reason?: string) =>
  (
    await api<{ endpoint: Endpoint }>("PUT", `/api/endpoints/${encodeURIComponent(String(id))}/status`, {
      status,
      ...(reason ? { reason } : {}),
    })
  ).endpoint

export const sendTestEvent = async (id: string | number) =>
  (
    await api<{ delivery: { id: number } }>(
      "POST",
      `/api/endpoints/${encodeURIComponent(String(id))}/test`,
      {},
    )
  ).delivery

export const setCustomHeaders = async (id: string | number, headers: Record<string, string>) =>
  (
    await api<{ endpoint: Endpoint }>("PUT", `/api/endpoints/${encodeURIComponent(String(id))}/headers`, {
      custom_headers: headers,
    })
  ).endpoint

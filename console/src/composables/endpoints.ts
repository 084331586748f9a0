import {
  CustomHeaderValueAnswer,
  EndpointAnswer,
  EndpointPage,
  EndpointWithHealth,
  TestDeliveryAnswer,
} from "../schemas"
import type { EndpointStatus } from "../types"
import { api, type Query, withQuery } from "./api"

export const ENDPOINT_FILTERS = ["owner", "provider", "status"] as const

export const listEndpoints = (filters: Query) =>
  api(EndpointPage, "GET", withQuery("/api/endpoints", filters))

export const getEndpoint = (id: string) =>
  api(EndpointWithHealth, "GET", `/api/endpoints/${encodeURIComponent(id)}`)

export const setEndpointStatus = async (id: string | number, status: EndpointStatus, reason?: string) =>
  (
    await api(EndpointAnswer, "PUT", `/api/endpoints/${encodeURIComponent(String(id))}/status`, {
      status,
      ...(reason ? { reason } : {}),
    })
  ).endpoint

export const sendTestEvent = async (id: string | number) =>
  (await api(TestDeliveryAnswer, "POST", `/api/endpoints/${encodeURIComponent(String(id))}/test`, {}))
    .delivery

/** A null value keeps the stored one, which the console never holds. */
export const setCustomHeaders = async (id: string | number, headers: Record<string, string | null>) =>
  (
    await api(EndpointAnswer, "PUT", `/api/endpoints/${encodeURIComponent(String(id))}/headers`, {
      custom_headers: headers,
    })
  ).endpoint

/** One custom header's value, for an admin (the server audits the reveal). */
export const revealCustomHeader = async (id: string | number, name: string) =>
  (
    await api(
      CustomHeaderValueAnswer,
      "POST",
      `/api/endpoints/${encodeURIComponent(String(id))}/headers/${encodeURIComponent(name)}/reveal`,
      {},
    )
  ).header.value

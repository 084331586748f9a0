import {
  BulkRetriesAnswer,
  BulkRetryAnswer,
  DeliveryAnswer,
  DeliveryDetailAnswer,
  DeliveryPage,
} from "../schemas"
import { api, type Query, withQuery } from "./api"

export const DELIVERY_FILTERS = [
  "owner",
  "provider",
  "endpoint",
  "event_type",
  "status",
  "since",
  "until",
  "id",
] as const
export type DeliveryFilter = (typeof DELIVERY_FILTERS)[number]

export const listDeliveries = (filters: Query) =>
  api(DeliveryPage, "GET", withQuery("/api/deliveries", filters))

export const getDelivery = async (id: string) =>
  (await api(DeliveryDetailAnswer, "GET", `/api/deliveries/${encodeURIComponent(id)}`)).delivery

export const retryDelivery = async (id: string | number) =>
  (await api(DeliveryAnswer, "POST", `/api/deliveries/${encodeURIComponent(String(id))}/retry`, {})).delivery

/** The job a bulk retry of `filter` would be, its snapshot taken: its `total` is what a start retries. */
export const previewBulkRetry = async (filter: Record<string, string>) =>
  (await api(BulkRetryAnswer, "POST", "/api/bulk-retries/previews", { filter })).bulk_retry

export const startPreviewedBulkRetry = async (id: number, ratePerSecond: number) =>
  (
    await api(BulkRetryAnswer, "POST", `/api/bulk-retries/${id}/start`, {
      rate_per_second: ratePerSecond,
    })
  ).bulk_retry

export const listBulkRetries = async () =>
  (await api(BulkRetriesAnswer, "GET", "/api/bulk-retries")).bulk_retries

export const getBulkRetry = async (id: string | number) =>
  (await api(BulkRetryAnswer, "GET", `/api/bulk-retries/${encodeURIComponent(String(id))}`)).bulk_retry

export const cancelBulkRetry = async (id: string | number) =>
  (await api(BulkRetryAnswer, "POST", `/api/bulk-retries/${encodeURIComponent(String(id))}/cancel`, {}))
    .bulk_retry

/** Statuses that still change by themselves: the detail page keeps watching them. */
export const isSettling = (status: string) =>
  ["pending", "delivering", "retrying", "rate_limited"].includes(status)

import { IngestLogPage } from "../schemas"
import { api, type Query, withQuery } from "./api"

export const INGEST_FILTERS = ["source", "outcome", "prospect", "since", "until"] as const

export const listIngest = (filters: Query) => api(IngestLogPage, "GET", withQuery("/api/ingest", filters))

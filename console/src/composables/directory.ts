import { OwnerAnswer, OwnerListPage, ProspectAnswer, SearchAnswer } from "../schemas"
import { api, type Query, withQuery } from "./api"

export type { OwnerDetail, ProspectDetail, SearchHit } from "../schemas"

export const OWNER_FILTERS = ["q"] as const

export const listOwners = (filters: Query) => api(OwnerListPage, "GET", withQuery("/api/owner-list", filters))

export const getOwner = async (slug: string) =>
  (await api(OwnerAnswer, "GET", `/api/owners/${encodeURIComponent(slug)}`)).owner

export const getProspect = async (id: string) =>
  (await api(ProspectAnswer, "GET", `/api/prospects/${encodeURIComponent(id)}`)).prospect

export const search = async (q: string) =>
  (await api(SearchAnswer, "GET", withQuery("/api/search", { q }))).results

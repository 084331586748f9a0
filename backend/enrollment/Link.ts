import { FIELD_LIMITS } from "../contract/FieldLimits.ts"
import { hasControlCharacter } from "../platform/Text.ts"
import type { EnrollmentFlow, Source } from "../prospects/Domain.ts"
import { redirectAllowed } from "../prospects/Sources.ts"
import type { StepPage } from "./StepPages.ts"

/**
 * An enrollment link as the renter opened it: `/enrollment/<flow>/<owner_slug>/<source>/<source_prospect_id>`
 * with `email` (required), `product` and `cadence` (preselected by an `offered_products` link) and, on the
 * expedited flow, `redirect_url`.
 */
export interface EnrollmentLink {
  readonly flow: EnrollmentFlow
  readonly ownerSlug: string
  readonly source: string
  readonly sourceProspectId: string
  readonly email: string
  readonly product: string | undefined
  readonly cadence: string | undefined
  readonly redirectUrl: string | undefined
}

/** Longest `redirect_url` taken: a browser's practical URL limit, far beyond any real return page. */
const MAX_REDIRECT_URL = 2048

const text = (value: string | undefined | null, max: number) =>
  value !== undefined &&
  value !== null &&
  value.length > 0 &&
  value.length <= max &&
  !hasControlCharacter(value)
    ? value
    : undefined

const isFlow = (value: string | undefined): value is EnrollmentFlow =>
  value === "embedded" || value === "expedited"

/**
 * The link in a request's path parameters and query, or undefined when it cannot name a prospect (a missing or
 * oversized part, a control character): such a link gets the same neutral page as one naming nobody. A
 * `product` or `cadence` that is not plain text is dropped (the renter chooses instead); a `redirect_url` is
 * kept only on the expedited flow and followed only if `followedRedirect` allows it.
 */
export const parseLink = (
  params: Readonly<Record<string, string | undefined>>,
  query: URLSearchParams,
): EnrollmentLink | undefined => {
  const flow = params.flow
  const ownerSlug = text(params.owner_slug, FIELD_LIMITS.external_org_id)
  const source = text(params.source, FIELD_LIMITS.source)
  const sourceProspectId = text(params.source_prospect_id, FIELD_LIMITS.source_prospect_id)
  const email = text(query.get("email")?.trim(), FIELD_LIMITS.email)
  if (!isFlow(flow) || !ownerSlug || !source || !sourceProspectId || !email) return undefined
  return {
    flow,
    ownerSlug,
    source,
    sourceProspectId,
    email,
    product: text(query.get("product"), 64),
    cadence: text(query.get("cadence"), 64),
    redirectUrl: flow === "expedited" ? text(query.get("redirect_url"), MAX_REDIRECT_URL) : undefined,
  }
}

/**
 * Where the renter goes when the expedited flow ends: the link's `redirect_url` when it is an https URL on one
 * of the source's allowlisted domains (the domain itself or a subdomain of it), otherwise nowhere; never a
 * redirect the partner did not allow.
 */
export const followedRedirect = (
  link: EnrollmentLink,
  source: Pick<Source, "redirectDomains"> | undefined,
): string | undefined =>
  link.flow === "expedited" &&
  link.redirectUrl !== undefined &&
  source !== undefined &&
  redirectAllowed(source, link.redirectUrl)
    ? new URL(link.redirectUrl).href
    : undefined

/** The link's own address (path and query) on the enrollment host: where its forms post and its answers return. */
export const linkPath = (link: EnrollmentLink) => {
  const query = new URLSearchParams({ email: link.email })
  if (link.product !== undefined) query.set("product", link.product)
  if (link.cadence !== undefined) query.set("cadence", link.cadence)
  if (link.redirectUrl !== undefined) query.set("redirect_url", link.redirectUrl)
  return (
    `/enrollment/${link.flow}/${encodeURIComponent(link.ownerSlug)}/${encodeURIComponent(link.source)}/` +
    `${encodeURIComponent(link.sourceProspectId)}?${query}`
  )
}

/**
 * The address of one of the link's pages: the link's path with the page's name, and its query; `returnTo` names
 * the page the renter came from to change an answer, where its form then leads back.
 */
export const pagePath = (link: EnrollmentLink, page: StepPage, returnTo?: StepPage) => {
  const [path, query] = linkPath(link).split("?", 2) as [string, string]
  return `${path}/${page}?${query}${returnTo === undefined ? "" : `&return=${returnTo}`}`
}

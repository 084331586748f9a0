import { constantTimeEqual } from "../platform/Crypto.ts"
import type { EnrollmentLink } from "./Link.ts"

/**
 * CSRF protection of the renter's forms. The pages keep no session: the link (with its email) is what admits
 * the renter. A form post is accepted only when the browser says it came from a page of this host
 * (`Sec-Fetch-Site: same-origin`, or an `Origin` equal to the enrollment host's) and it carries a token this
 * host issued for the same link within the last day; a page of another site can do neither.
 */

const PURPOSE = "enrollment-form"
/** Long enough for a renter who leaves a page open and comes back the next day; a stale page just reloads. */
export const FORM_TOKEN_LIFETIME_MS = 24 * 60 * 60 * 1000

export type Mac = (purpose: string, message: string) => string

const subject = (link: EnrollmentLink, expiresAt: number) =>
  [expiresAt, link.flow, link.ownerSlug, link.source, link.sourceProspectId].join("\u0000")

/** `<expiry ms>.<tag>`: the hidden `csrf_token` field of every form of the link's pages. */
export const issueFormToken = (mac: Mac, link: EnrollmentLink, now: number) => {
  const expiresAt = now + FORM_TOKEN_LIFETIME_MS
  return `${expiresAt}.${mac(PURPOSE, subject(link, expiresAt))}`
}

/** Whether `token` was issued by this deployment for this link and has not expired. */
export const formTokenValid = (mac: Mac, link: EnrollmentLink, token: string | null, now: number) => {
  const match = token === null ? null : /^(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(token)
  if (match === null) return false
  const expiresAt = Number(match[1])
  if (expiresAt < now || expiresAt > now + FORM_TOKEN_LIFETIME_MS) return false
  return constantTimeEqual(match[2]!, mac(PURPOSE, subject(link, expiresAt)))
}

/**
 * Whether a POST came from a page of the enrollment host itself: the browser's fetch metadata when it sends
 * it, otherwise the `Origin` header. A request carrying neither is refused: every browser sends `Origin` on a
 * form post.
 */
export const postedFromThisHost = (headers: Headers, enrollmentOrigin: string) => {
  const site = headers.get("sec-fetch-site")
  if (site !== null) return site === "same-origin"
  return headers.get("origin") === enrollmentOrigin
}

import type { EnrollmentFlow } from "../prospects/Domain.ts"

/** Who may frame a page: the owner's HTTPS origins on the embedded flow, nobody on the expedited one. */
export interface Framing {
  readonly flow: EnrollmentFlow | undefined
  /** The owner's `embedded_frame_ancestors`; empty when the owner is unknown or lists none. */
  readonly frameAncestors: ReadonlyArray<string>
}

/**
 * The `frame-ancestors` source list: exactly the owner's origins on an embedded page, `'none'` when there are
 * none or the page is not embedded. The origins were validated as HTTPS origins when the owner was saved; one
 * holding anything a policy could not carry is left out rather than allowed to alter the policy.
 */
export const frameAncestorsSources = (framing: Framing) => {
  const origins =
    framing.flow === "embedded"
      ? framing.frameAncestors.filter((origin) => /^https:\/\/[^\s;,']+$/.test(origin))
      : []
  return origins.length > 0 ? origins.join(" ") : "'none'"
}

/**
 * Headers of every renter page. Nothing loads from elsewhere (the CSS and script are our own), forms post and
 * redirect only to this host (the expedited flow's `redirect_url` is a link on the confirmation), no page is
 * cached (they show personal data), and the link (which carries the renter's email) never leaves in a Referer
 * while same-origin form posts keep their Origin for the CSRF check.
 */
export const pageHeaders = (
  framing: Framing,
  options: { readonly https: boolean },
): Record<string, string> => {
  const ancestors = frameAncestorsSources(framing)
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    `frame-ancestors ${ancestors}`,
  ].join("; ")
  return {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": policy,
    // Browsers without CSP Level 2 still refuse to frame a page nobody may frame.
    ...(ancestors === "'none'" ? { "x-frame-options": "DENY" } : {}),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    ...(options.https ? { "strict-transport-security": "max-age=31536000" } : {}),
  }
}

/** Headers of the host's own CSS and script: cacheable, never sniffed, never used by another site. */
export const assetHeaders = (contentType: string): Record<string, string> => ({
  "content-type": contentType,
  "cache-control": "public, max-age=3600",
  "x-content-type-options": "nosniff",
  "cross-origin-resource-policy": "same-origin",
})

/**
 * The security headers of a public face's pages (the renter's enrollment pages, the partner portal): nothing loads
 * from elsewhere but images from the origins a page names, forms post only to this host, nothing is cached, no link leaves in a Referer, and only the
 * origins given may frame the page.
 */

/** An HTTPS origin holding nothing a policy could not carry (a space, `;`, `,`, a quote, a wildcard). */
const isPlainHttpsOrigin = (origin: string) => /^https:\/\/[^\s;,'*]+$/.test(origin)

/**
 * The `frame-ancestors` sources of `origins`, `'none'` when none are left. The origins were checked as exact HTTPS
 * origins when they were saved; one holding anything a policy could not carry (a space, `;`, `,`, a quote, a
 * wildcard) is left out rather than allowed to alter the policy.
 */
export const frameAncestorSources = (origins: ReadonlyArray<string>) => {
  const kept = origins.filter(isPlainHttpsOrigin)
  return kept.length > 0 ? kept.join(" ") : "'none'"
}

/** The headers of a page framed only by `ancestors` (a `frame-ancestors` source list, or `'none'`). */
export const pageSecurityHeaders = (
  ancestors: string,
  options: {
    readonly https: boolean
    readonly contentType: string
    /** Whether the page's own script calls this host (`connect-src 'self'`). */
    readonly connects?: boolean
    /**
     * Origins the page shows images from besides this host (`img-src`), checked as `frameAncestorSources`
     * checks its origins: one that is not a plain HTTPS origin is left out.
     */
    readonly imageOrigins?: ReadonlyArray<string>
  },
): Record<string, string> => {
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    ["img-src 'self'", ...(options.imageOrigins ?? []).filter(isPlainHttpsOrigin)].join(" "),
    ...(options.connects === true ? ["connect-src 'self'"] : []),
    "form-action 'self'",
    "base-uri 'none'",
    `frame-ancestors ${ancestors}`,
  ].join("; ")
  return {
    "content-type": options.contentType,
    "content-security-policy": policy,
    // Browsers without CSP Level 2 still refuse to frame a page nobody may frame.
    ...(ancestors === "'none'" ? { "x-frame-options": "DENY" } : {}),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    ...(options.https ? { "strict-transport-security": "max-age=31536000" } : {}),
  }
}

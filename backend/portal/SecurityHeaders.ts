/**
 * Who may frame a portal response: the session's parent origin, when it has one, else nobody. The origin was
 * checked as exactly an HTTPS origin of the owner's when the session was made; anything a policy could not carry
 * is left out rather than allowed to alter it.
 */
export const frameAncestors = (parentOrigin: string | null | undefined) =>
  parentOrigin !== null && parentOrigin !== undefined && /^https:\/\/[^\s;,'*]+$/.test(parentOrigin)
    ? parentOrigin
    : "'none'"

/**
 * Headers of every portal response, as the renter's pages send them: nothing loads from elsewhere, nothing is
 * cached (the portal shows a partner's webhooks), no link leaves in a Referer, and only the session's parent may
 * frame it.
 */
export const portalHeaders = (
  parentOrigin: string | null | undefined,
  options: { readonly https: boolean; readonly contentType: string },
): Record<string, string> => {
  const ancestors = frameAncestors(parentOrigin)
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
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
